// optimizer.cpp — CPU kernels of the fused optimizer updates: every tensor of the group is cut
// into chunks, the chunks shared among threads, and each element updated by the formula in
// ops/optimizer_kernels.h.
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels.h"
#include "ops/optimizer_kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/parallel.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

constexpr int64_t kChunk = 16384;  // elements per unit of work

// Calls fn(i, begin, end) for chunks [begin, end) of every tensor i of `params`, in parallel, so
// that a model's many small tensors and few large ones spread evenly over the threads.
template <class F> void for_each_chunk(const TensorList& params, F&& fn) {
  std::vector<std::pair<size_t, int64_t>> chunks;  // (tensor, first element)
  int64_t total = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    total += params[i].numel();
    for (int64_t b = 0; b < params[i].numel(); b += kChunk) chunks.push_back({i, b});
  }
  const int64_t n = int64_t(chunks.size());
  parallel_for(n, total / std::max<int64_t>(n, 1), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      auto [i, b] = chunks[size_t(c)];
      fn(i, b, std::min(b + kChunk, params[i].numel()));
    }
  });
}

// Element pointer of list[i], or nullptr for an unused (empty) state list.
template <class T> T* data_or_null(const TensorList& list, size_t i) {
  return list.empty() ? nullptr : list[i].data<T>();
}

// The update loops below are written once for each presence of an optional state tensor (a null
// pointer), so that no element tests it, and take the hyper-parameters by value, so that their
// tests are seen to be the same at every element and move out of the loop: both keep the loops
// vectorisable (a store under a per-element condition, or a field reloaded after every store,
// kept them scalar: sgd_step ran at a third of NumPy's bandwidth on 64k-element tensors).
template <class T, bool kMomentum>
void sgd_range(T* p, const T* g, T* buf, int64_t n, const SgdHyper h) {
  using C = compute_t<T>;
  const auto loop = [&](const SgdHyper& k) {
    for (int64_t j = 0; j < n; ++j) {
      C pj = C(p[j]), bj = kMomentum ? C(buf[j]) : C(0);
      sgd_update(pj, C(g[j]), bj, k);
      p[j] = T(pj);
      if constexpr (kMomentum) buf[j] = T(bj);
    }
  };
  // The usual settings (momentum or none, no damping, decay, Nesterov or sign change, past the
  // first step) run with those flags as constants of the loop, so that they fold away: with five
  // runtime flags GCC kept one test per element and ran the loop scalar.
  if (!h.maximize && h.weight_decay == 0 && h.dampening == 0 && !h.nesterov && !h.first_step)
    loop(SgdHyper{h.lr, kMomentum ? h.momentum : 0.0, 0.0, 0.0, false, false, false});
  else loop(h);
}

void sgd(const std::vector<TensorList>& lists, const SgdHyper& h) {
  dispatch_floating(lists[0][0].dtype(), "sgd_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_chunk(lists[0], [&](size_t i, int64_t b, int64_t e) {
      T* p = lists[0][i].data<T>() + b;
      const T* g = lists[1][i].data<T>() + b;
      T* buf = data_or_null<T>(lists[2], i);
      if (buf) sgd_range<T, true>(p, g, buf + b, e - b, h);
      else sgd_range<T, false>(p, g, nullptr, e - b, h);
    });
  });
}

template <class T> void adam_range(T* p, const T* g, T* m, T* v, int64_t n, const AdamHyper h) {
  using C = compute_t<T>;
  for (int64_t j = 0; j < n; ++j) {
    C pj = C(p[j]), mj = C(m[j]), vj = C(v[j]);
    adam_update(pj, C(g[j]), mj, vj, h);
    p[j] = T(pj);
    m[j] = T(mj);
    v[j] = T(vj);
  }
}

void adam(const std::vector<TensorList>& lists, const AdamHyper& h) {
  dispatch_floating(lists[0][0].dtype(), "adam_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_chunk(lists[0], [&](size_t i, int64_t b, int64_t e) {
      adam_range<T>(lists[0][i].data<T>() + b, lists[1][i].data<T>() + b, lists[2][i].data<T>() + b,
                    lists[3][i].data<T>() + b, e - b, h);
    });
  });
}

void rmsprop(const std::vector<TensorList>& lists, const RmspropHyper& h) {
  dispatch_floating(lists[0][0].dtype(), "rmsprop_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for_each_chunk(lists[0], [&](size_t i, int64_t b, int64_t e) {
      T* p = lists[0][i].data<T>();
      const T* g = lists[1][i].data<T>();
      T* sq = lists[2][i].data<T>();
      T* buf = data_or_null<T>(lists[3], i);
      T* ga = data_or_null<T>(lists[4], i);
      for (int64_t j = b; j < e; ++j) {
        C pj = C(p[j]), sj = C(sq[j]), bj = buf ? C(buf[j]) : C(0), aj = ga ? C(ga[j]) : C(0);
        rmsprop_update(pj, C(g[j]), sj, bj, aj, h);
        p[j] = T(pj);
        sq[j] = T(sj);
        if (buf) buf[j] = T(bj);
        if (ga) ga[j] = T(aj);
      }
    });
  });
}

}  // namespace

void register_optimizer(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/optimizer.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"

// reduction.cpp — CPU kernels of the reduction family (being written).
namespace ember::cpu {
void register_reduction() {}
}  // namespace ember::cpu

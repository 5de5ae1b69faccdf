"""einsum: Einstein summation, reduced to the ops it names (diagonals by a mask of eye, sums,
permutes, reshapes and one batched matmul per pair of operands), so its gradient is theirs."""

import math

from ember import _core


def _error(equation, why, fix):
    return _core.ValueError(f"einsum('{equation}'): {why}. Fix: {fix}")


def _parse_term(equation, term, ndim, ellipsis_dims):
    """A term's labels, one per dim: letters, and for the dims '...' covers the ints
    ellipsis_dims - k .. ellipsis_dims - 1 (right-aligned, so that they broadcast as NumPy's)."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise _error(equation, f"'{term}' has a stray '.'", "write '...' at most once per operand")
    head, dots, tail = term.partition("...")
    for ch in head + tail:
        if not ch.isalpha():
            raise _error(equation, f"'{ch}' is not a subscript", "use letters a-z and A-Z")
    if ndim is None:  # the output term: '...' stands for every broadcast dim
        return [*head, *range(ellipsis_dims), *tail] if dots else [*head]
    named = len(head) + len(tail)
    if named > ndim or (not dots and named != ndim):
        raise _error(equation, f"'{term}' names {named} dims of an operand with {ndim}",
                     "give one subscript per dim, or '...' for the rest")
    k = ndim - named
    return [*head, *range(ellipsis_dims - k, ellipsis_dims), *tail]


def _diagonal(x, labels):
    """x with each repeated label reduced to its diagonal (x_ii -> y_i): masked by eye, summed."""
    labels = list(labels)
    while len(set(labels)) < len(labels):
        first = next(i for i, lab in enumerate(labels) if labels.index(lab) != i)
        d0 = labels.index(labels[first])
        n = x.shape[d0]
        if x.shape[first] != n:
            raise _core.ShapeError(
                f"einsum: subscript '{labels[first]}' repeats over dims of sizes {n} and "
                f"{x.shape[first]} of one operand; a diagonal needs equal sizes")
        shape = [1] * x.ndim
        shape[d0] = shape[first] = n
        x = (x * _core.eye(n, dtype=x.dtype, device=x.device).reshape(shape)).sum(first)
        del labels[first]
    return x, labels


def _sum_out(x, labels, keep):
    """x summed over the labels not in keep."""
    gone = [i for i, lab in enumerate(labels) if lab not in keep]
    if not gone:
        return x, labels
    return x.sum(tuple(gone)), [lab for lab in labels if lab in keep]


def _permuted(x, order):
    return x if order == list(range(x.ndim)) else x.permute(order)


def _shaped(x, shape, broadcast=False):
    if list(x.shape) == list(shape):  # the common case: no op to record
        return x
    return x.broadcast_to(shape) if broadcast else x.reshape(shape)


def _contract(a, la, b, lb, keep, sizes):
    """The product of two operands summed over their shared labels not in keep, as one batched
    matmul: a [batch, a_only, shared] @ b [batch, shared, b_only]."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    shared = [lab for lab in la if lab in lb and lab not in keep]
    a_only = [lab for lab in la if lab not in lb]
    b_only = [lab for lab in lb if lab not in la]
    ax = _permuted(a, [la.index(lab) for lab in batch + a_only + shared])
    bx = _permuted(b, [lb.index(lab) for lab in batch + shared + b_only])
    # The batch and summed dims broadcast (a size-1 dim against the other operand's size).
    common = [sizes[lab] for lab in batch]
    summed = [sizes[lab] for lab in shared]
    a_sizes = list(ax.shape[len(batch):len(batch) + len(a_only)])
    b_sizes = list(bx.shape[len(batch) + len(shared):])
    ax = _shaped(ax, common + a_sizes + summed, broadcast=True)
    bx = _shaped(bx, common + summed + b_sizes, broadcast=True)
    nb, ns = math.prod(common), math.prod(summed)
    out = _shaped(ax, [nb, math.prod(a_sizes), ns]) @ _shaped(bx, [nb, ns, math.prod(b_sizes)])
    return _shaped(out, common + a_sizes + b_sizes), batch + a_only + b_only


def einsum(equation, *operands):
    """Einstein summation, as torch.einsum: einsum('ij,jk->ik', a, b) is a @ b.

    One comma-separated term of subscripts (letters) per operand, then optionally '->' and the
    output's subscripts; without '->' the output is the labels seen once, in alphabetical order.
    '...' stands for dims that broadcast; a subscript repeated within a term takes a diagonal
    ('ii->i') or a trace ('ii'). The operands may also come as one list.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for k, x in enumerate(operands):
        if not isinstance(x, _core.Tensor):
            raise _core.DTypeError(
                f"einsum('{equation}'): operand {k} is a {type(x).__name__}; expected an "
                "ember.Tensor. Fix: wrap it with ember.tensor(...)")
    eq = equation.replace(" ", "")
    inputs, arrow, output = eq.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise _error(equation, f"{len(terms)} operand term(s) for {len(operands)} operand(s)",
                     "give one comma-separated term per operand")
    ellipsis_dims = max(
        [x.ndim - len(t.replace("...", "")) for t, x in zip(terms, operands) if "..." in t],
        default=0)
    labels = [_parse_term(equation, t, x.ndim, ellipsis_dims) for t, x in zip(terms, operands)]
    sizes = {}  # each label's size: the one size other than 1 among its dims, else 1
    for x, ls in zip(operands, labels):
        for lab, n in zip(ls, x.shape):
            if n != 1 and sizes.get(lab, 1) not in (1, n):
                name = "'...'" if isinstance(lab, int) else f"'{lab}'"
                raise _core.ShapeError(
                    f"einsum('{equation}'): subscript {name} stands for dims of sizes "
                    f"{sizes[lab]} and {n} (operand shapes {[list(o.shape) for o in operands]}); "
                    "the dims of one subscript must be equal or 1")
            sizes[lab] = n if n != 1 else sizes.get(lab, 1)
    if arrow:
        out = _parse_term(equation, output, None, ellipsis_dims)
        for lab in out:
            if out.count(lab) > 1 or lab not in sizes:
                raise _error(equation, f"output subscript '{lab}' is repeated or not an input's",
                             "name each output subscript once, from the inputs'")
    else:
        letters = {lab for ls in labels for lab in ls if isinstance(lab, str)}
        out = [*range(ellipsis_dims),
               *sorted(lab for lab in letters if sum(ls.count(lab) for ls in labels) == 1)]
    xs = []
    for k, (x, ls) in enumerate(zip(operands, labels)):
        x, ls = _diagonal(x, ls)
        others = {lab for j, o in enumerate(labels) if j != k for lab in o}
        xs.append(_sum_out(x, ls, set(out) | others))
    x, ls = xs[0]
    for k, (y, ly) in enumerate(xs[1:], start=1):
        later = {lab for _, o in xs[k + 1:] for lab in o}
        x, ls = _contract(x, ls, y, ly, set(out) | later, sizes)
    x, ls = _sum_out(x, ls, set(out))
    x = _permuted(x, [ls.index(lab) for lab in out])
    return _shaped(x, [sizes[lab] for lab in out], broadcast=True)


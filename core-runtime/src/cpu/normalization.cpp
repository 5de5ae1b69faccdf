// normalization.cpp — CPU kernels of the normalization family (being written).
namespace ember::cpu {
void register_normalization() {}
}  // namespace ember::cpu

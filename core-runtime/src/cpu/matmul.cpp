// matmul.cpp — CPU kernels of the matmul family (being written).
namespace ember::cpu {
void register_matmul() {}
}  // namespace ember::cpu

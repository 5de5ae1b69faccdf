// elementwise.cpp — CPU kernels of the elementwise family (being written).
namespace ember::cpu {
void register_elementwise() {}
}  // namespace ember::cpu

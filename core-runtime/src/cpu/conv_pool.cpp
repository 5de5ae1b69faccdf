// conv_pool.cpp — CPU kernels of the conv_pool family (being written).
namespace ember::cpu {
void register_conv_pool() {}
}  // namespace ember::cpu

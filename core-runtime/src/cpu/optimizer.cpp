// optimizer.cpp — CPU kernels of the optimizer family (being written).
namespace ember::cpu {
void register_optimizer() {}
}  // namespace ember::cpu

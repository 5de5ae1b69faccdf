// creation.cpp — CPU kernels of the creation family (being written).
namespace ember::cpu {
void register_creation() {}
}  // namespace ember::cpu

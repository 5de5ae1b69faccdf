// softmax_loss.cpp — CPU kernels of the softmax_loss family (being written).
namespace ember::cpu {
void register_softmax_loss() {}
}  // namespace ember::cpu

// softmax_loss.cu — CUDA kernels of the softmax_loss family (being written).
namespace ember::cuda {
void register_softmax_loss() {}
}  // namespace ember::cuda

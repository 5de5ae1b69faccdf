// optimizer.cu — CUDA kernels of the optimizer family (being written).
namespace ember::cuda {
void register_optimizer() {}
}  // namespace ember::cuda

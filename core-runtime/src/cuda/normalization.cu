// normalization.cu — CUDA kernels of the normalization family (being written).
namespace ember::cuda {
void register_normalization() {}
}  // namespace ember::cuda

// elementwise.cu — CUDA kernels of the elementwise family (being written).
namespace ember::cuda {
void register_elementwise() {}
}  // namespace ember::cuda

// copy_fill.cu — CUDA kernels of the copy_fill family (being written).
namespace ember::cuda {
void register_copy_fill() {}
}  // namespace ember::cuda

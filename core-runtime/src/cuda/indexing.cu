// indexing.cu — CUDA kernels of the indexing family (being written).
namespace ember::cuda {
void register_indexing() {}
}  // namespace ember::cuda

// indexing.cpp — CPU kernels of the indexing family (being written).
namespace ember::cpu {
void register_indexing() {}
}  // namespace ember::cpu

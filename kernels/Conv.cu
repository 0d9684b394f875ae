#include "Common.cuh"
void amprt::cuda::registerConv(amprt::KernelTable &) {}

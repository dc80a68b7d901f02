// libmemra.so is the union of the lib/<module> static libraries (linked whole-archive) and, when
// CUDA is on, the kernels. This translation unit exists only because a library needs a source.
namespace memra {
int memra_shared_library_anchor = 0;
}

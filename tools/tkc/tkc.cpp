#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("tkc 0.1.0\n");
      return 0;
    }
  std::fprintf(stderr, "tkc: error: no input file\n");
  return 1;
}

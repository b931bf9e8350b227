// The `sluice` command line.
#include <cstdio>

int main(int argc, char** argv) {
  std::printf("usage: sluice <demo|datagen|bench> [options]\n");
  return argc > 1 ? 1 : 0;
}

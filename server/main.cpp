// anelm entry point: dispatches to the subcommands (serve, generate, tokenize, inspect, bench, make-model, compile).
#include <cstdio>
int main() { std::puts("anelm: under construction"); return 0; }

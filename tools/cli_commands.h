// The anelm subcommands; each takes the arguments after its name and returns the process exit code.
#pragma once

namespace anelm::tools {

int run_tokenize(int argc, char** argv);
int run_generate(int argc, char** argv);
int run_inspect(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_make_model(int argc, char** argv);
int run_compile(int argc, char** argv);
int run_render_template(int argc, char** argv);

}  // namespace anelm::tools

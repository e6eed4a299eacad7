// `anelm serve`: the OpenAI-compatible HTTP server subcommand.
#pragma once

namespace anelm::server {

// argv[0] is the program or subcommand name; the flags follow. Returns the process exit code:
// 0 after a clean SIGINT/SIGTERM shutdown or --help, 1 when the model fails to load or the port
// cannot be bound, 2 for invalid options.
int run_serve(int argc, char** argv);

}  // namespace anelm::server

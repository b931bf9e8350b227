// The `sluice` command line's subcommand families, one file each (tools/<family>_command.cc).
//
// Each Add*Command registers its subcommand(s) on `app`; the callback runs the command
// after parsing and stores its exit status in *exit_code. Option storage lives in the
// callback's closure.
#ifndef SLUICE_TOOLS_COMMANDS_H_
#define SLUICE_TOOLS_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace sluice {

// sluice datagen imagenet|text ... (tools/datagen_command.cc)
void AddDatagenCommand(CLI::App& app, int* exit_code);
// sluice bench <suite> ... (tools/bench_command.cc)
void AddBenchCommand(CLI::App& app, int* exit_code);
// sluice spec show|fingerprint|export <file.json> (tools/spec_command.cc)
void AddSpecCommand(CLI::App& app, int* exit_code);
// sluice ops [NAME] [--json|--markdown] [--all] (tools/ops_command.cc)
void AddOpsCommand(CLI::App& app, int* exit_code);
// sluice plumber [spec.json] [--trace t] [--apply out.json] [--json] [--html r.html]
// (tools/plumber_command.cc)
void AddPlumberCommand(CLI::App& app, int* exit_code);
// sluice dispatcher ... / sluice worker ... (tools/service_command.cc)
void AddServiceCommands(CLI::App& app, int* exit_code);
// sluice cluster --workers N ... (tools/cluster_command.cc)
void AddClusterCommand(CLI::App& app, int* exit_code);
// sluice profile spec.json --trace out.json ... (tools/profile_command.cc)
void AddProfileCommand(CLI::App& app, int* exit_code);
void AddIndexCommand(CLI::App& app, int* exit_code);

}  // namespace sluice

#endif  // SLUICE_TOOLS_COMMANDS_H_

// The Python interpreters the FlexAttention checks run under: Debian's, where
// python3-torch 1.13 installs (a python3 earlier on PATH, such as a pyenv
// one, would not see it), which applies the emitted functions to a dense
// score tensor, FlexAttention's definition; and PyTorch 2.x's environment
// (tools/python_env.sh, .venv-torch in the source folder), where they run
// through torch.nn.attention.flex_attention itself. Each that can import
// torch; the checks skip where there is none.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace posc::testing {

struct Interpreter {
  std::string path;
  bool flex = false;  // PyTorch >= 2.5: the checks must say they went through flex_attention
};

const std::vector<Interpreter>& pythonInterpreters();

inline constexpr const char* kNoTorch =
    "no python3 can import torch (Debian: apt-get install python3-torch; PyTorch 2.x: bash tools/python_env.sh)";

// Runs tests/flex/SCRIPT under `python` (script_and_args: the script's name
// and its arguments, quoted for the shell as the caller needs); its output
// goes to `log`. Under PyTorch 2.x the output must name flex_attention: a
// silent fall-back to the dense path would leave FlexAttention untested.
void expectCheckPasses(const Interpreter& python, const std::string& script_and_args, const std::filesystem::path& log,
                       const std::string& environment = "");

}  // namespace posc::testing

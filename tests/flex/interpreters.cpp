// The Python interpreters of the FlexAttention checks (see interpreters.h).
#include "tests/flex/interpreters.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/common/files.h"

namespace posc::testing {

namespace fs = std::filesystem;

const std::vector<Interpreter>& pythonInterpreters() {
  static const std::vector<Interpreter> found = [] {
    auto imports = [](const std::string& python) {
      return std::system((python + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
    };
    std::vector<Interpreter> out;
    const std::string debian = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (imports(debian)) out.push_back({debian, false});
    const std::string venv = std::string(POSC_SOURCE_DIR) + "/.venv-torch/bin/python";
    if (fs::exists(venv) && imports(venv)) out.push_back({venv, true});
    return out;
  }();
  return found;
}

void expectCheckPasses(const Interpreter& python, const std::string& script_and_args, const fs::path& log,
                       const std::string& environment) {
  const std::string cmd = environment + python.path + " '" POSC_SOURCE_DIR "/tests/flex/" + script_and_args + " >'" +
                          log.string() + "' 2>&1";
  const std::string printed = [&] {
    const int status = std::system(cmd.c_str());
    const std::string text = readFile(log);
    EXPECT_EQ(status, 0) << python.path << "\n" << text;
    return text;
  }();
  if (python.flex) {
    EXPECT_NE(printed.find("flex_attention"), std::string::npos) << python.path << "\n" << printed;
  }
}

}  // namespace posc::testing

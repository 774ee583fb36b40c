// libFuzzer harness of the front end: any bytes as the main .pos file,
// through parsing, every experiment's semantic analysis and the plan, and
// the rendering of every diagnostic. The file sits in examples/addition, so
// inputs that import the study's files reach deep into sema.
//
//   tests/fuzz/run.sh  (builds with POSC_FUZZ=ON and runs the harnesses)
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/driver/compile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  posc::driver::Compilation c;
  posc::driver::CompileRequest request;
  request.path = POSC_SOURCE_DIR "/examples/addition/fuzz_input.pos";
  request.text = std::string(reinterpret_cast<const char*>(data), size);
  if (c.checkAll(request) && c.plan) {  // a file of components only has no plan
    (void)posc::plan::dumpPlan(*c.plan);
  }
  (void)c.diags.render(false);
  return 0;
}

#include "passes/Pass.h"

#include <functional>
#include <utility>

namespace tkc {

std::unique_ptr<Pass> createFoldPass();
std::unique_ptr<Pass> createLayoutPass();
std::unique_ptr<Pass> createTailPass();
std::unique_ptr<Pass> createPipelinePass();
std::unique_ptr<Pass> createSmemPlanPass();
std::unique_ptr<Pass> createBarriersPass();
std::unique_ptr<Pass> createHopperLayoutPass();
std::unique_ptr<Pass> createHopperPipelinePass();
std::unique_ptr<Pass> createWarpSpecializePass();
std::unique_ptr<Pass> createHopperEpiloguePass();
std::unique_ptr<Pass> createHopperOperandRegistersPass();
std::unique_ptr<Pass> createHopperReducerPass();

namespace {
using Factory = std::unique_ptr<Pass> (*)();
// The default pipeline, in order.
constexpr std::pair<const char *, Factory> kPasses[] = {
    {"fold", createFoldPass},           {"layout", createLayoutPass},
    {"tail", createTailPass},           {"pipeline", createPipelinePass},
    {"smem-plan", createSmemPlanPass},  {"barriers", createBarriersPass},
    // sm_90a only (no-ops for older targets).
    {"hopper-layout", createHopperLayoutPass}, {"hopper-pipeline", createHopperPipelinePass},
    {"warp-specialize", createWarpSpecializePass}, {"hopper-operand-registers", createHopperOperandRegistersPass},
    {"hopper-epilogue", createHopperEpiloguePass}, {"hopper-reducer", createHopperReducerPass},
};
} // namespace

std::vector<std::unique_ptr<Pass>> createPipeline() {
  // tail runs before layout so that the masks it inserts get layouts like
  // any other elementwise op; fold runs again after pipelining to drop the
  // address arithmetic that the asynchronous copies replaced.
  std::vector<std::unique_ptr<Pass>> passes;
  // The sm_90a passes do nothing for older targets: hopper-layout claims the
  // loops that wgmma can run before `pipeline` sees them, and the others
  // run after the last `fold`, whose dead-code sweep knows nothing of the ops
  // they introduce.
  for (const char *name : {"fold", "tail", "layout", "hopper-layout", "pipeline", "fold", "hopper-pipeline",
                           "warp-specialize", "hopper-operand-registers", "hopper-reducer", "hopper-epilogue", "smem-plan",
                           "barriers"})
    passes.push_back(createPass(name));
  return passes;
}

std::unique_ptr<Pass> createPass(const std::string &name) {
  for (auto &[passName, factory] : kPasses)
    if (name == passName && factory)
      return factory();
  return nullptr;
}

} // namespace tkc

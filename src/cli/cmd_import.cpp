// `memplan import MODEL -o graph.json`: the imported graph, for inspection
// and editing; planning the JSON gives the same plan as the model.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli.h"

namespace memplan::cli {

Command addImportCommand(CLI::App& app) {
  struct ImportCommand {
    std::string input, output, method;
    bool reorder = false;
    InputFlags flags;
  };
  auto cmd = std::make_shared<ImportCommand>();
  CLI::App* sub = app.add_subcommand("import", "Convert a model to memplan graph JSON");
  sub->add_option("MODEL", cmd->input, "Model file (.onnx, .tflite, graph .json)")->required();
  sub->add_option("-o,--output", cmd->output, "Graph JSON to write (default: stdout)");
  sub->add_option("--method", cmd->method, "ExecuTorch .pte: the method to convert (one graph each)");
  sub->add_flag("--reorder", cmd->reorder,
                "Write the nodes in an order that needs less memory (as memplan plan --reorder)");
  cmd->flags.addTo(*sub);
  return {sub, [cmd] {
            if (!cmd->output.empty()) checkOutputExtension(cmd->output, {".json"}, "-o");
            const Input in = cmd->flags.read(cmd->input);
            printEachWarning(inputWarnings(in));
            if (!in.model())
              throw InputError(fmt::format("{}: not a model (spec lists and CSV buffer lists have no graph)",
                                           cmd->input));
            Model model = in.pte() ? methodModel(*in.pte(), pteMethodIndex(*in.pte(), cmd->method))
                                   : *in.model();
            if (cmd->reorder) model = reorderedModel(model);
            const std::string json = writeGraphJson(model);
            if (cmd->output.empty())
              std::cout << json;
            else
              writeFileAtomic(cmd->output, json);
            return kExitOk;
          }};
}

}  // namespace memplan::cli

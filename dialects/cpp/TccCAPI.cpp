//===- TccCAPI.cpp - registration and the mlir-opt driver ----------------===//
//
// Bridges the parts of MLIR that the C API does not expose to tcc's Rust
// code: full dialect/pass registration, passes written in Rust registered by
// name (with option strings checked by Rust), named pipelines, and
// MlirOptMain for tcc-opt.
//
//===----------------------------------------------------------------------===//

#include "TccCAPI.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "TccDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <deque>
#include <mutex>
#include <string>

using namespace mlir;

namespace {

/// One option of a Rust pass, as the Rust side declares it.
struct RustPassOption {
  std::string name;
  std::string kind; // bool, int or string
  std::string defaultValue;
  std::string description;
};

/// A registered Rust pass: owned copies of its strings plus the callbacks.
struct RustPassInfo {
  std::string argument;
  std::string summary;
  std::optional<std::string> anchor;
  std::vector<std::string> dependentDialects;
  std::vector<RustPassOption> options;
  const void *pass;
  TccRustPassCheckOptions checkOptions;
  TccRustPassRun run;
  TccRustPassSplitOptions splitOptions;
};

/// Parses the registration's "name\tkind\tdefault\tdescription" lines.
std::vector<RustPassOption> parseOptionSpecs(StringRef text) {
  std::vector<RustPassOption> options;
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef line : lines) {
    SmallVector<StringRef, 4> fields;
    line.split(fields, '\t', 3);
    fields.resize(4);
    options.push_back(RustPassOption{fields[0].str(), fields[1].str(),
                                     fields[2].str(), fields[3].str()});
  }
  return options;
}

/// Adds the dialect called `name` to `registry`. Covers the dialects tcc's
/// passes create ops of; an unknown name is a programming error on the
/// Rust side and is reported at registration.
bool insertDialectByName(DialectRegistry &registry, StringRef name) {
  if (name == "tosa") registry.insert<tosa::TosaDialect>();
  else if (name == "arith") registry.insert<arith::ArithDialect>();
  else if (name == "math") registry.insert<math::MathDialect>();
  else if (name == "tensor") registry.insert<tensor::TensorDialect>();
  else if (name == "linalg") registry.insert<linalg::LinalgDialect>();
  else if (name == "scf") registry.insert<scf::SCFDialect>();
  else if (name == "memref") registry.insert<memref::MemRefDialect>();
  else if (name == "affine") registry.insert<affine::AffineDialect>();
  else if (name == "func") registry.insert<func::FuncDialect>();
  else if (name == "gpu") registry.insert<gpu::GPUDialect>();
  else if (name == "vector") registry.insert<vector::VectorDialect>();
  else if (name == "bufferization") registry.insert<bufferization::BufferizationDialect>();
  else if (name == "llvm") registry.insert<LLVM::LLVMDialect>();
  else if (name == "spirv") registry.insert<spirv::SPIRVDialect>();
  else if (name == "tcc") {
    registry.insert<tcc::TccDialect>();
    tcc::registerBufferizationModels(registry);
  }
  else return false;
  return true;
}

/// Stable storage: TypeIDs are the addresses of these entries.
std::deque<RustPassInfo> &rustPasses() {
  static std::deque<RustPassInfo> passes;
  return passes;
}

std::deque<std::string> &pipelineStrings() {
  static std::deque<std::string> strings;
  return strings;
}

/// tcc-opt's command-line arguments (empty in other programs), so that a
/// bad pass option can be pointed at where it was written.
std::vector<std::string> &commandLine() {
  static std::vector<std::string> arguments;
  return arguments;
}

/// Where the option string `options` of pass `argument` was written on
/// tcc-opt's command line, as a prefix for its error: `--pass-pipeline:1:C: `
/// (C the column of the options in the pipeline text) or `in '--FLAG': `;
/// empty when it is not found there (a pipeline built by a program).
std::string optionSource(StringRef argument, StringRef options) {
  for (const std::string &word : commandLine()) {
    StringRef text(word);
    if (text.consume_front("--pass-pipeline=") ||
        text.consume_front("-pass-pipeline=")) {
      std::string opening = (argument + "{").str();
      for (size_t at = text.find(opening); at != StringRef::npos;
           at = text.find(opening, at + 1)) {
        size_t column = at + opening.size();
        if (!text.substr(column).starts_with(options))
          continue;
        std::string caret(column, ' ');
        return ("--pass-pipeline:1:" + Twine(column + 1) + ": ").str() +
               "[[MESSAGE]]\n  " + text.str() + "\n  " + caret + "^";
      }
    } else if (text.starts_with(("--" + argument + "=").str()) ||
               text.starts_with(("-" + argument + "=").str())) {
      return "in '" + word + "': [[MESSAGE]]";
    }
  }
  return "[[MESSAGE]]";
}

/// The MLIR pass that runs a Rust pass. The option string is checked by the
/// Rust side when the pipeline is parsed and handed to each run. The
/// options the Rust pass declares are mirrored as MLIR pass options, so
/// that `--help` lists them and a printed pipeline (`--dump-pass-pipeline`,
/// crash reproducers) carries their values.
class RustPass : public Pass {
public:
  explicit RustPass(const RustPassInfo &info)
      : Pass(TypeID::getFromOpaquePointer(&info),
             info.anchor ? std::optional<StringRef>(*info.anchor)
                         : std::nullopt),
        info(info) {
    declareOptions();
  }
  RustPass(const RustPass &other)
      : Pass(other), info(other.info), options(other.options) {
    declareOptions();
    mirrorOptions(options);
  }

  StringRef getName() const override { return info.argument; }
  StringRef getArgument() const override { return info.argument; }
  StringRef getDescription() const override { return info.summary; }

  void getDependentDialects(DialectRegistry &registry) const override {
    for (const std::string &name : info.dependentDialects)
      insertDialectByName(registry, name);
  }

  bool canScheduleOn(RegisteredOperationName opName) const override {
    return true;
  }

  std::unique_ptr<Pass> clonePass() const override {
    return std::make_unique<RustPass>(*this);
  }

  LogicalResult initializeOptions(
      StringRef optionString,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    std::string message;
    auto collect = [](MlirStringRef part, void *userData) {
      static_cast<std::string *>(userData)->append(part.data, part.length);
    };
    if (mlirLogicalResultIsFailure(info.checkOptions(
            info.pass, wrap(optionString), collect, &message))) {
      std::string located = optionSource(info.argument, optionString);
      size_t slot = located.find("[[MESSAGE]]");
      return errorHandler(located.replace(slot, 11, message));
    }
    options = optionString.str();
    mirrorOptions(options);
    return success();
  }

  void runOnOperation() override {
    if (mlirLogicalResultIsFailure(
            info.run(info.pass, wrap(StringRef(options)),
                     wrap(getOperation()))))
      signalPassFailure();
  }

private:
  /// Creates an MLIR option for each option the Rust pass declares.
  void declareOptions() {
    for (const RustPassOption &spec : info.options) {
      auto description = llvm::cl::desc(spec.description);
      if (spec.kind == "bool") {
        boolOptions.push_back(std::make_unique<Option<bool>>(
            *this, spec.name, description));
      } else if (spec.kind == "int") {
        intOptions.push_back(std::make_unique<Option<int64_t>>(
            *this, spec.name, description));
      } else {
        stringOptions.push_back(std::make_unique<Option<std::string>>(
            *this, spec.name, description));
      }
    }
  }

  /// Sets the mirrored options to the defaults, then to the values in
  /// `optionString` (already checked by the Rust side).
  void mirrorOptions(StringRef optionString) {
    for (const RustPassOption &spec : info.options)
      setOption(spec.name, spec.defaultValue);
    auto pair = [](MlirStringRef key, MlirStringRef value, void *userData) {
      static_cast<RustPass *>(userData)->setOption(unwrap(key), unwrap(value));
    };
    info.splitOptions(wrap(optionString), pair, this);
  }

  void setOption(StringRef name, StringRef value) {
    for (auto &option : boolOptions)
      if (option->ArgStr == name)
        *option = value == "true" || value == "1";
    for (auto &option : intOptions) {
      int64_t number = 0;
      if (option->ArgStr == name && !value.getAsInteger(10, number))
        *option = number;
    }
    for (auto &option : stringOptions)
      if (option->ArgStr == name)
        *option = value.str();
  }

  const RustPassInfo &info;
  std::string options;
  std::vector<std::unique_ptr<Option<bool>>> boolOptions;
  std::vector<std::unique_ptr<Option<int64_t>>> intOptions;
  std::vector<std::unique_ptr<Option<std::string>>> stringOptions;
};

} // namespace

extern "C" void tccRegisterAllDialects(MlirDialectRegistry cRegistry) {
  DialectRegistry &registry = *unwrap(cRegistry);
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<tcc::TccDialect>();
  tcc::registerBufferizationModels(registry);
}

extern "C" void tccRegisterAllPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] { registerAllPasses(); });
}

extern "C" bool tccRegisterRustPass(const TccRustPassInfo *cInfo) {
  std::vector<std::string> dialects;
  SmallVector<StringRef> names;
  StringRef(cInfo->dependentDialects ? cInfo->dependentDialects : "")
      .split(names, ',', -1, /*KeepEmpty=*/false);
  DialectRegistry probe;
  for (StringRef name : names) {
    if (!insertDialectByName(probe, name.trim()))
      return false;
    dialects.push_back(name.trim().str());
  }
  RustPassInfo &info = rustPasses().emplace_back(RustPassInfo{
      cInfo->argument, cInfo->summary,
      cInfo->anchor ? std::optional<std::string>(cInfo->anchor)
                    : std::nullopt,
      std::move(dialects),
      parseOptionSpecs(cInfo->options ? cInfo->options : ""), cInfo->pass,
      cInfo->checkOptions, cInfo->run, cInfo->splitOptions});
  registerPass([&info]() -> std::unique_ptr<Pass> {
    return std::make_unique<RustPass>(info);
  });
  return true;
}

extern "C" void tccRegisterPassPipeline(const char *argument,
                                        const char *summary,
                                        const char *pipeline) {
  auto &strings = pipelineStrings();
  StringRef arg = strings.emplace_back(argument);
  StringRef desc = strings.emplace_back(summary);
  StringRef text = strings.emplace_back(pipeline);
  registerPassPipeline(
      arg, desc,
      [text](OpPassManager &pm, StringRef options,
             function_ref<LogicalResult(const Twine &)> errorHandler) {
        if (!options.empty())
          return errorHandler("pipeline takes no options");
        return parsePassPipeline(text, pm, llvm::errs());
      },
      [](function_ref<void(const detail::PassOptions &)>) {});
}

/// Where `text` nests brackets ({ ( [ <) deeper than `limit`: the offset
/// of the first opener past the limit. String literals and // comments
/// are skipped, the `>` of `->` is not a closer, and MLIR bytecode is not
/// scanned. MLIR's parser recurses once per level, so without this check a
/// few thousand levels overflow the stack.
static std::optional<size_t> excessiveNesting(StringRef text, unsigned limit) {
  if (text.starts_with("ML\xefR"))
    return std::nullopt;
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    switch (text[i]) {
    case '"':
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '/':
      if (i + 1 < e && text[i + 1] == '/')
        while (i < e && text[i] != '\n')
          ++i;
      break;
    case '{':
    case '(':
    case '[':
    case '<':
      if (++depth > limit)
        return i;
      break;
    case '>':
      if (i > 0 && text[i - 1] == '-')
        break;
      [[fallthrough]];
    case '}':
    case ')':
    case ']':
      if (depth)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

static std::string nestingMessage() {
  return "brackets ({, (, [, <) nest deeper than " +
         std::to_string(TCC_MAX_NESTING_DEPTH) +
         " levels here: tcc's parsers accept at most " +
         std::to_string(TCC_MAX_NESTING_DEPTH);
}

extern "C" bool tccCheckNestingDepth(MlirStringRef source, unsigned limit,
                                     unsigned *line, unsigned *column) {
  StringRef text = unwrap(source);
  std::optional<size_t> at = excessiveNesting(text, limit);
  if (!at)
    return true;
  StringRef before = text.take_front(*at);
  *line = 1 + before.count('\n');
  size_t lineStart = before.rfind('\n');
  *column = 1 + (lineStart == StringRef::npos ? *at : *at - lineStart - 1);
  return false;
}

/// mlir-opt's driver (as upstream `MlirOptMain(argc, argv, ...)`), with
/// the input checked for excessive nesting before MLIR parses it.
extern "C" int tccOptMain(int argc, char **argv, const char *version) {
  llvm::InitLLVM initLLVM(argc, argv);
  commandLine().assign(argv + 1, argv + argc);
  // `tcc-opt --version` names tcc, its version and git hash, then LLVM's.
  std::string versionText = version ? version : "";
  llvm::cl::SetVersionPrinter([versionText](llvm::raw_ostream &os) {
    os << "tcc-opt " << versionText << "\n  LLVM " << LLVM_VERSION_STRING
       << "\n";
  });
  DialectRegistry registry;
  tccRegisterAllDialects(wrap(&registry));
  tccRegisterAllPasses();
  // As upstream's registerAndParseCLIOptions, except that a command-line
  // error exits with 2 (usage), as tcc and tcc-run do, instead of 1.
  static llvm::cl::opt<std::string> inputFilename(
      llvm::cl::Positional, llvm::cl::desc("<input file>"),
      llvm::cl::init("-"));
  static llvm::cl::opt<std::string> outputFilename(
      "o", llvm::cl::desc("Output filename"),
      llvm::cl::value_desc("filename"), llvm::cl::init("-"));
  MlirOptMainConfig::registerCLOptions(registry);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  tracing::DebugCounter::registerCLOptions();
  std::string helpHeader =
      "tcc-opt: the tcc pass driver\n\nAvailable Dialects: ";
  llvm::raw_string_ostream dialects(helpHeader);
  llvm::interleaveComma(registry.getDialectNames(), dialects);
  if (!llvm::cl::ParseCommandLineOptions(argc, argv, helpHeader,
                                         &llvm::errs()))
    return 2;
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Errors in pass options (`--tcc-foo=bad`, `--pass-pipeline=...{bad}`)
  // have no place in the input: report them as tcc-opt's own errors, not
  // at `<unknown>:0`.
  MlirOptMainConfig cliConfig = config;
  config.setPassPipelineSetupFn([cliConfig](PassManager &pm) {
    ScopedDiagnosticHandler handler(pm.getContext(), [](Diagnostic &diag) {
      if (!isa<UnknownLoc>(diag.getLocation()))
        return failure();
      std::string text = diag.str();
      if (!text.empty())
        llvm::errs() << "tcc-opt: error: " << text << "\n";
      return success();
    });
    return cliConfig.setupPassPipeline(pm);
  });
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (std::optional<size_t> at =
          excessiveNesting(file->getBuffer(), TCC_MAX_NESTING_DEPTH)) {
    llvm::SourceMgr sourceMgr;
    const char *where = file->getBufferStart() + *at;
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    sourceMgr.PrintMessage(llvm::errs(), llvm::SMLoc::getFromPointer(where),
                           llvm::SourceMgr::DK_Error, nestingMessage());
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  bool ok = succeeded(MlirOptMain(output->os(), std::move(file), registry, config));
  // A write error (a closed pipe) is reported the way tcc and tcc-run
  // report it, instead of by the stream's fatal error when it is
  // destroyed.
  output->os().flush();
  if (output->os().has_error()) {
    std::error_code error = output->os().error();
    output->os().clear_error();
    llvm::errs() << "tcc-opt: error: cannot write to "
                 << (outputFilename == "-" ? std::string("standard output")
                                          : outputFilename)
                 << ": " << error.message() << "\n";
    return EXIT_FAILURE;
  }
  if (!ok)
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}

extern "C" MlirModule tccParseModule(MlirContext context, MlirStringRef source,
                                     MlirStringRef name) {
  unsigned line = 0, column = 0;
  if (!tccCheckNestingDepth(source, TCC_MAX_NESTING_DEPTH, &line, &column)) {
    emitError(FileLineColLoc::get(unwrap(context), unwrap(name), line, column),
              nestingMessage());
    return MlirModule{nullptr};
  }
  // MLIR's lexer relies on a NUL after the text (it scans an identifier
  // at the very end until it meets one): parse a NUL-terminated copy, not
  // the caller's bytes (cargo-fuzz found the over-read with a file ending
  // in `func.funl`).
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(unwrap(source), unwrap(name)),
      llvm::SMLoc());
  ParserConfig config(unwrap(context));
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, config);
  return wrap(module.release());
}

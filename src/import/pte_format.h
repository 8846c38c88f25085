// The ExecuTorch program format as memplan reads it: field ids of the
// public schema (schema/program.fbs, identifier "ET12") and a verifying
// reader over flatbuffers::Verifier. Shared by the importer (pte_import),
// the field listing (pte_describe) and the writer (pte_writer).
//
// Every table, vector, string and scalar is checked with the Verifier right
// before it is read, so nothing is read that was not verified. Tables are
// entered and left at once: memplan's own traversal has a fixed depth.
#pragma once

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "import/flatbuffer_reader.h"
#include "memplan/types.h"

namespace memplan::pte {

namespace fb = flatbuffers;
using flatbuf::FieldId;
using flatbuf::TableVector;
// A union takes two field ids: its type byte, then its value.
using flatbuf::field;

namespace program_f {
constexpr FieldId kVersion = field(0), kExecutionPlan = field(1), kConstantBuffer = field(2),
                  kBackendDelegateData = field(3), kSegments = field(4),
                  kConstantSegment = field(5), kMutableDataSegments = field(6),
                  kNamedData = field(7);
}
namespace plan_f {
constexpr FieldId kName = field(0), kContainerMetaType = field(1), kValues = field(2),
                  kInputs = field(3), kOutputs = field(4), kChains = field(5),
                  kOperators = field(6), kDelegates = field(7), kNonConstBufferSizes = field(8);
}
namespace evalue_f {
constexpr FieldId kValType = field(0), kVal = field(1);
}
namespace tensor_f {
constexpr FieldId kScalarType = field(0), kStorageOffset = field(1), kSizes = field(2),
                  kDimOrder = field(3), kRequiresGrad = field(4), kDataBufferIdx = field(5),
                  kAllocationInfo = field(6), kLayout = field(7), kShapeDynamism = field(8),
                  kExtraTensorInfo = field(9);
}
namespace alloc_f {
constexpr FieldId kMemoryId = field(0), kOffsetLow = field(1), kOffsetHigh = field(2);
}
namespace extra_f {
constexpr FieldId kMutableDataSegmentsIdx = field(0), kFullyQualifiedName = field(1),
                  kLocation = field(2);
}
namespace chain_f {
constexpr FieldId kInputs = field(0), kOutputs = field(1), kInstructions = field(2),
                  kStacktrace = field(3);
}
namespace instruction_f {
constexpr FieldId kArgsType = field(0), kArgs = field(1);
}
// KernelCall{op_index, args}, DelegateCall{delegate_index, args},
// MoveCall{move_from, move_to}, JumpFalseCall{cond_value_index,
// destination_instruction}, FreeCall{value_index}: int fields in order.
constexpr FieldId kCallFirst = field(0), kCallSecond = field(1);
namespace operator_f {
constexpr FieldId kName = field(0), kOverload = field(1);
}
namespace delegate_f {
constexpr FieldId kId = field(0), kProcessed = field(1), kCompileSpecs = field(2);
}
namespace segment_f {
constexpr FieldId kOffset = field(0), kSize = field(1);
}

// EValue.val union types (KernelTypes).
enum ValueType : std::uint8_t {
  kNoValue = 0, kNull = 1, kInt = 2, kBool = 3, kDouble = 4, kTensor = 5, kString = 6,
  kIntList = 7, kDoubleList = 8, kBoolList = 9, kTensorList = 10, kOptionalTensorList = 11,
};
// Instruction.instr_args union types (InstructionArguments).
enum InstructionType : std::uint8_t {
  kNoInstruction = 0, kKernelCall = 1, kDelegateCall = 2, kMoveCall = 3, kJumpFalseCall = 4,
  kFreeCall = 5,
};

inline constexpr char kIdentifier[] = "ET12";
inline constexpr char kHeaderMagic[] = "eh00";
inline constexpr std::size_t kHeaderAt = 8;            // right after root offset + identifier
inline constexpr std::uint32_t kHeaderMinLength = 24;  // magic, length, program size, base
inline constexpr std::uint32_t kHeaderFullLength = 32; // + segment data size

inline std::uint32_t readU32(const std::uint8_t* p) { return fb::ReadScalar<std::uint32_t>(p); }
inline std::uint64_t readU64(const std::uint8_t* p) { return fb::ReadScalar<std::uint64_t>(p); }

// The place being read, formatted only when something is wrong.
struct Where {
  const char* what = "program";
  std::int64_t index = -1;         // element index in its vector
  std::int64_t method = -1;        // enclosing method, if any
  const std::string* method_name = nullptr;
  std::string str() const {
    std::string s;
    if (method >= 0) {
      s = fmt::format("method {}", method);
      if (method_name && !method_name->empty()) s += fmt::format(" '{}'", *method_name);
      s += ' ';
    }
    s += what;
    if (index >= 0) s += fmt::format(" {}", index);
    return s;
  }
};

// The file's flatbuffer part (its bytes 8-aligned), checked as it is read.
class Reader : public flatbuf::Reader<Where> {
 public:
  // `fb_size` bytes from `buf` are the flatbuffer (< 2 GiB).
  Reader(const std::uint8_t* buf, std::size_t fb_size, const std::string& source)
      : flatbuf::Reader<Where>(buf, fb_size, source,
                               {"an ExecuTorch program", 1u << 27, /*aligned_wide_elements=*/true}) {}
};

// The layout around the flatbuffer: the extended header, if present, and
// where the flatbuffer ends and the segments start. Throws InputError.
struct Layout {
  bool header = false;
  std::uint32_t header_length = 0;
  std::uint64_t program_size = 0;    // bytes of the flatbuffer (header included)
  std::uint64_t segment_base = 0;    // 0: no segments
  std::uint64_t segment_data_size = 0;
};
Layout readLayout(std::string_view bytes, const std::string& source);

// The bytes as 8-aligned storage (flatbuffer scalars are read in place).
class AlignedBytes {
 public:
  explicit AlignedBytes(std::string_view bytes);
  const std::uint8_t* data() const { return data_; }

 private:
  std::vector<std::uint64_t> copy_;
  const std::uint8_t* data_;
};

// Element sizes of ExecuTorch's ScalarType (c10 numbering); 0 = unknown.
unsigned scalarTypeBytes(std::int8_t code);
// FNV-1a, for listing byte blobs.
std::uint64_t hashBytes(const std::uint8_t* p, std::size_t n);
// A hash of describePte(bytes, source, false): the same walk and checks,
// nothing formatted (pte_describe.cpp). Equal listings give equal hashes.
std::uint64_t fieldHash(std::string_view bytes, const std::string& source_name);

}  // namespace memplan::pte

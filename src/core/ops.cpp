#include "ember/core/ops.hpp"

namespace ember {

#define EMBER_NAME_ENTRY(Name, name, ...) #name,
#define EMBER_KINDS_CASE(Name, name, kinds, ...) \
  case Op::Name:                                 \
    return OpKinds::kinds;

// A table lookup: op names are read on every op call (error messages, checks).
#define EMBER_DEFINE_NAMES(OpType, LIST)                                   \
  std::string_view op_name(OpType op) {                                    \
    static constexpr std::string_view kNames[] = {LIST(EMBER_NAME_ENTRY)}; \
    return kNames[static_cast<int>(op)];                                   \
  }
EMBER_DEFINE_NAMES(UnaryOp, EMBER_ALL_UNARY_OPS)
EMBER_DEFINE_NAMES(BinaryOp, EMBER_BINARY_OPS)
EMBER_DEFINE_NAMES(ReduceOp, EMBER_REDUCE_OPS)
EMBER_DEFINE_NAMES(ArgReduceOp, EMBER_ARG_REDUCE_OPS)
EMBER_DEFINE_NAMES(ScanOp, EMBER_SCAN_OPS)

OpKinds op_kinds(UnaryOp op) {
  using Op = UnaryOp;
  switch (op) { EMBER_ALL_UNARY_OPS(EMBER_KINDS_CASE) }
  return OpKinds::A;
}
OpKinds op_kinds(BinaryOp op) {
  using Op = BinaryOp;
  switch (op) { EMBER_BINARY_OPS(EMBER_KINDS_CASE) }
  return OpKinds::A;
}

}  // namespace ember

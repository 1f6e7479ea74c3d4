#include "pytorch_pickle.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "ember/core/error.hpp"
#include "ember/core/shape.hpp"

namespace ember::io::detail {

const std::vector<TorchDType>& torch_dtypes() {
  static const std::vector<TorchDType> table = {
      {"FloatStorage", "float32", DType::f32, 4}, {"DoubleStorage", "float64", DType::f64, 8},
      {"HalfStorage", "float16", DType::f16, 2},  {"BFloat16Storage", "bfloat16", DType::bf16, 2},
      {"LongStorage", "int64", DType::i64, 8},    {"IntStorage", "int32", DType::i32, 4},
      {"ShortStorage", "int16", DType::i32, 2},   {"CharStorage", "int8", DType::i8, 1},
      {"ByteStorage", "uint8", DType::u8, 1},     {"BoolStorage", "bool", DType::boolean, 1},
  };
  return table;
}

namespace {

using Kind = PickleValue::Kind;

// torch's other spellings of its dtypes (torch.float is torch.float32).
constexpr std::pair<const char*, const char*> kDTypeAliases[] = {
    {"float", "float32"}, {"double", "float64"}, {"half", "float16"},
    {"long", "int64"},    {"int", "int32"},      {"short", "int16"}};

int dtype_by_name_impl(const std::string& name) {
  std::string n = name;
  for (const auto& [alias, canonical] : kDTypeAliases) {
    if (n == alias) n = canonical;
  }
  const auto& table = torch_dtypes();
  for (size_t i = 0; i < table.size(); ++i) {
    if (n == table[i].name) return static_cast<int>(i);
  }
  return -2;
}

int dtype_by_storage(const std::string& name) {
  const auto& table = torch_dtypes();
  for (size_t i = 0; i < table.size(); ++i) {
    if (name == table[i].storage) return static_cast<int>(i);
  }
  return -2;
}

// The callables and classes the unpickler knows; any other global is refused.
enum class Callable {
  None,
  OrderedDict,
  RebuildTensor,
  RebuildTensorV2,
  RebuildTensorV3,
  RebuildParameter,
  RebuildParameterWithState,
  RebuildFromTypeV2,
  Size,
  Device,
  CodecsEncode,
  Set,
  TensorType,
  Storage,
  DTypeValue
};

const std::pair<const char*, Callable> kGlobals[] = {
    {"collections.OrderedDict", Callable::OrderedDict},
    {"torch._utils._rebuild_tensor", Callable::RebuildTensor},
    {"torch._utils._rebuild_tensor_v2", Callable::RebuildTensorV2},
    {"torch._utils._rebuild_tensor_v3", Callable::RebuildTensorV3},
    {"torch._utils._rebuild_parameter", Callable::RebuildParameter},
    {"torch._utils._rebuild_parameter_with_state", Callable::RebuildParameterWithState},
    {"torch._tensor._rebuild_from_type_v2", Callable::RebuildFromTypeV2},
    {"torch._utils._rebuild_from_type_v2", Callable::RebuildFromTypeV2},
    {"torch.Size", Callable::Size},
    {"torch.device", Callable::Device},
    {"_codecs.encode", Callable::CodecsEncode},
    {"builtins.set", Callable::Set},
    {"builtins.frozenset", Callable::Set},
    {"__builtin__.set", Callable::Set},
    {"torch.Tensor", Callable::TensorType},
    {"torch.nn.parameter.Parameter", Callable::TensorType},
    {"torch.UntypedStorage", Callable::Storage},
    {"torch.storage.UntypedStorage", Callable::Storage},
};

// Decodes UTF-8 into code points; false on a malformed sequence.
bool utf8_code_points(const std::string& s, std::vector<uint32_t>& out) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + static_cast<size_t>(n) > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc >> 6) != 2) return false;
      cp = cp << 6 | (cc & 0x3F);
    }
    out.push_back(cp);
    i += static_cast<size_t>(n);
  }
  return true;
}

class Unpickler {
 public:
  Unpickler(const unsigned char* data, size_t size, const char* what, const std::string& label)
      : data_(data), size_(size), what_(what), label_(label) {}

  Pickle run() {
    for (;;) {
      const size_t op_at = pos_;
      const unsigned char op = byte();
      if (op == '.') break;
      step(op, op_at);
    }
    EMBER_CHECK(stack_.size() == 1 && marks_.empty(), where(), "the pickle ends with ",
                stack_.size(), " values on its stack (one was expected)");
    out_.root = stack_.back();
    return std::move(out_);
  }

 private:
  template <class... A>
  [[noreturn]] void fail(const A&... a) const {
    EMBER_FAIL(where(), a...);
  }
  std::string where() const { return std::string(what_) + " " + label_ + ": data.pkl: "; }

  // ---- reading the byte stream
  void need(uint64_t n) const {
    if (n > size_ - pos_) {
      fail("the pickle is truncated at byte ", pos_, " (", n, " more bytes needed, ", size_ - pos_,
           " left)");
    }
  }
  unsigned char byte() {
    need(1);
    return data_[pos_++];
  }
  uint64_t uint_le(int bytes) {
    need(static_cast<uint64_t>(bytes));
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = v << 8 | data_[pos_ + static_cast<size_t>(i)];
    pos_ += static_cast<size_t>(bytes);
    return v;
  }
  std::string take(uint64_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  std::string line() {
    const void* nl = std::memchr(data_ + pos_, '\n', size_ - pos_);
    if (!nl) fail("the pickle is truncated at byte ", pos_, " (a text line has no end)");
    const size_t n = static_cast<size_t>(static_cast<const unsigned char*>(nl) - (data_ + pos_));
    std::string s = take(n);
    ++pos_;
    return s;
  }
  int64_t decimal(std::string text, const char* op) {
    if (!text.empty() && text.back() == 'L') text.pop_back();
    const size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    bool ok = i < text.size() && text.size() <= 20;
    for (size_t k = i; ok && k < text.size(); ++k) ok = text[k] >= '0' && text[k] <= '9';
    if (!ok) fail(op, " holds '", text.substr(0, 40), "', which is not a 64-bit integer");
    errno = 0;
    const long long v = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) fail(op, " holds ", text, ", which does not fit in 64 bits");
    return v;
  }

  // ---- values and the stack
  uint32_t make(PickleValue v) {
    out_.values.push_back(std::move(v));
    return static_cast<uint32_t>(out_.values.size() - 1);
  }
  uint32_t make_int(int64_t i, Kind kind = Kind::Int) {
    PickleValue v;
    v.kind = kind;
    v.i = i;
    return make(std::move(v));
  }
  uint32_t make_str(std::string s, Kind kind = Kind::Str) {
    PickleValue v;
    v.kind = kind;
    v.s = std::move(s);
    return make(std::move(v));
  }
  PickleValue& at(uint32_t id) { return out_.values[id]; }
  void push(uint32_t id) { stack_.push_back(id); }
  uint32_t pop(const char* op) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back()))
      fail(op, " at byte ", pos_ - 1, " finds its stack empty");
    const uint32_t id = stack_.back();
    stack_.pop_back();
    return id;
  }
  uint32_t& top(const char* op) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back()))
      fail(op, " at byte ", pos_ - 1, " finds its stack empty");
    return stack_.back();
  }
  // The values pushed since the last MARK, which is dropped.
  std::vector<uint32_t> pop_mark(const char* op) {
    if (marks_.empty()) fail(op, " at byte ", pos_ - 1, " has no MARK before it");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  uint32_t expect(uint32_t id, Kind kind, const char* op, const char* role) {
    if (at(id).kind != kind) fail(op, ": ", role, " is ", describe(out_, id));
    return id;
  }

  // ---- containers
  void set_item(uint32_t dict, uint32_t key, uint32_t value, const char* op) {
    expect(dict, Kind::Dict, op, "the target");
    const PickleValue& k = at(key);
    std::string index_key;
    if (k.kind == Kind::Str) {
      index_key = "s" + k.s;
    } else if (k.kind == Kind::Int || k.kind == Kind::Bool) {
      index_key = "i" + std::to_string(k.i);
    } else {
      index_key = "#" + std::to_string(key);  // other keys (tuples, floats) are kept by identity
    }
    auto [it, fresh] = dict_index_[dict].emplace(index_key, at(dict).items.size());
    if (fresh) {
      at(dict).items.push_back(key);
      at(dict).items.push_back(value);
    } else {
      at(dict).items[it->second + 1] = value;  // Python: a repeated key keeps the last value
    }
  }
  void append(uint32_t list, uint32_t item, const char* op) {
    expect(list, Kind::List, op, "the target");
    at(list).items.push_back(item);
  }

  // ---- globals
  uint32_t global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    PickleValue v;
    v.kind = Kind::Global;
    v.s = full;
    if (module == "torch") {
      if (const int d = torch_dtype_index(name); d >= 0) {
        v.dtype = d;
        v.i = static_cast<int64_t>(Callable::DTypeValue);
        return make(std::move(v));
      }
      if (const int d = dtype_by_storage(name); d >= 0) {
        v.dtype = d;
        v.i = static_cast<int64_t>(Callable::Storage);
        return make(std::move(v));
      }
      if (name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0)
        fail("the storage type torch.", name, " has no Ember dtype (Ember reads float32, float64,",
             " float16, bfloat16, int64, int32, int16, int8, uint8 and bool)");
    }
    for (const auto& [known, callable] : kGlobals) {
      if (full == known) {
        v.i = static_cast<int64_t>(callable);
        return make(std::move(v));
      }
    }
    fail("the pickle asks for the global '", full,
         "', which was refused: a weights file is read, never run, so only tensors, storages, ",
         "parameters, OrderedDict, torch.Size, torch.device and dtypes are rebuilt");
  }
  Callable callable_of(uint32_t id, const char* op) {
    if (at(id).kind != Kind::Global) fail(op, " calls ", describe(out_, id), ", not a global");
    return static_cast<Callable>(at(id).i);
  }

  // ---- rebuilding
  int64_t int_arg(const std::vector<uint32_t>& args, size_t i, const char* fn, const char* role) {
    const PickleValue& v = at(args[i]);
    if (v.kind != Kind::Int) fail(fn, ": ", role, " is ", describe(out_, args[i]));
    return v.i;
  }
  std::vector<int64_t> ints_arg(const std::vector<uint32_t>& args, size_t i, const char* fn,
                                const char* role) {
    const PickleValue& v = at(args[i]);
    if (v.kind != Kind::Tuple && v.kind != Kind::List)
      fail(fn, ": ", role, " is ", describe(out_, args[i]), ", not a tuple of integers");
    if (v.items.size() > static_cast<size_t>(ember::kMaxRank))
      fail(fn, ": ", role, " has ", v.items.size(), " dimensions, more than Ember's maximum of ",
           ember::kMaxRank);
    std::vector<int64_t> out;
    for (size_t k = 0; k < v.items.size(); ++k) out.push_back(int_arg(v.items, k, fn, role));
    return out;
  }

  uint32_t rebuild_tensor(const std::vector<uint32_t>& args, size_t min_args, const char* fn,
                          bool with_dtype) {
    if (args.size() < min_args)
      fail(fn, " takes at least ", min_args, " arguments, the pickle gives ", args.size());
    const uint32_t storage = args[0];
    if (at(storage).kind != Kind::Storage)
      fail(fn, ": its storage is ", describe(out_, storage), ", not a storage");
    PickleValue t;
    t.kind = Kind::Tensor;
    t.storage = storage;
    t.offset = int_arg(args, 1, fn, "the storage offset");
    t.sizes = ints_arg(args, 2, fn, "the size");
    t.strides = ints_arg(args, 3, fn, "the stride");
    t.dtype = at(storage).dtype;
    if (with_dtype) {
      const uint32_t d = args[6];
      if (at(d).kind != Kind::Global || static_cast<Callable>(at(d).i) != Callable::DTypeValue)
        fail(fn, ": its dtype is ", describe(out_, d), ", not a torch dtype Ember has");
      if (t.dtype != kUntyped && t.dtype != at(d).dtype)
        fail(fn, ": a ", torch_dtypes()[static_cast<size_t>(t.dtype)].storage, " viewed as torch.",
             torch_dtypes()[static_cast<size_t>(at(d).dtype)].name);
      t.dtype = at(d).dtype;
    }
    if (t.dtype == kUntyped) fail(fn, ": a tensor over an untyped storage names no dtype");
    check_view(t, fn);
    return make(std::move(t));
  }

  // The view stays inside its storage: offset + sum((size - 1) * stride) < the storage's length,
  // in 128-bit arithmetic (the sizes are the file's, so they may be anything).
  void check_view(const PickleValue& t, const char* fn) {
    if (t.sizes.size() != t.strides.size())
      fail(fn, ": size has ", t.sizes.size(), " dimensions but stride has ", t.strides.size());
    if (t.offset < 0) fail(fn, ": the storage offset ", t.offset, " is negative");
    __int128 numel = 1, last = t.offset;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      if (t.sizes[d] < 0 || t.strides[d] < 0)
        fail(fn, ": size ", vec(t.sizes), " with stride ", vec(t.strides), " has a negative entry");
      numel *= t.sizes[d];
      if (numel > INT64_MAX) fail(fn, ": size ", vec(t.sizes), " has more than 2^63 elements");
    }
    const PickleValue& s = at(t.storage);
    const int size = torch_dtypes()[static_cast<size_t>(t.dtype)].size;
    const __int128 length = s.dtype == kUntyped ? s.i / size : s.i;
    if (numel == 0) return;
    // Each term is below 2^126 and the sum stops once past the length (below 2^63): no wrap.
    for (size_t d = 0; d < t.sizes.size() && last < length; ++d)
      last += static_cast<__int128>(t.sizes[d] - 1) * t.strides[d];
    if (last >= length)
      fail(fn, ": size ", vec(t.sizes), " with stride ", vec(t.strides), " at offset ", t.offset,
           " reaches past the end of storage '", s.s, "', which holds ",
           static_cast<int64_t>(length), " (strides out of bounds, or the storage too short)");
  }
  static std::string vec(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }

  // `args` is a copy: making a value may move every value, and the items of one with them.
  uint32_t call(uint32_t fn_id, const std::vector<uint32_t> args, const char* op, int depth = 0) {
    const Callable c = callable_of(fn_id, op);
    const std::string name = at(fn_id).s;  // a copy, for the same reason
    const char* fn = name.c_str();
    switch (c) {
      case Callable::OrderedDict: {
        PickleValue d;
        d.kind = Kind::Dict;
        const uint32_t dict = make(std::move(d));
        if (!args.empty()) {
          const uint32_t pairs = args[0];
          if (at(pairs).kind != Kind::List && at(pairs).kind != Kind::Tuple)
            fail(fn, ": its argument is ", describe(out_, pairs));
          for (size_t i = 0; i < at(pairs).items.size(); ++i) {
            const uint32_t pair = at(pairs).items[i];
            if (at(pair).kind != Kind::Tuple || at(pair).items.size() != 2)
              fail(fn, ": item ", i, " is ", describe(out_, pair), ", not a (key, value) pair");
            set_item(dict, at(pair).items[0], at(pair).items[1], fn);
          }
        }
        return dict;
      }
      case Callable::RebuildTensor:
        return rebuild_tensor(args, 4, fn, false);
      case Callable::RebuildTensorV2:
        return rebuild_tensor(args, 6, fn, false);
      case Callable::RebuildTensorV3:
        return rebuild_tensor(args, 7, fn, true);
      case Callable::RebuildParameter:
      case Callable::RebuildParameterWithState:
        if (args.empty() || at(args[0]).kind != Kind::Tensor)
          fail(fn, ": its data is ", args.empty() ? "missing" : describe(out_, args[0]));
        return args[0];
      case Callable::RebuildFromTypeV2: {
        if (args.size() < 3 || depth > 0) fail(fn, " takes (function, type, args, state)");
        if (callable_of(args[1], fn) != Callable::TensorType)
          fail(fn, ": the type ", at(args[1]).s, " is not torch.Tensor or torch.nn.Parameter");
        expect(args[2], Kind::Tuple, fn, "its argument tuple");
        return call(args[0], at(args[2]).items, fn, depth + 1);
      }
      case Callable::Size: {
        if (args.size() != 1) fail(fn, " takes one tuple of sizes");
        ints_arg(args, 0, fn, "its argument");
        PickleValue t;
        t.kind = Kind::Tuple;
        t.items = at(args[0]).items;
        return make(std::move(t));
      }
      case Callable::Device: {
        if (args.empty() || at(args[0]).kind != Kind::Str) fail(fn, " takes a device type");
        std::string d = at(args[0]).s;
        if (args.size() > 1) d += ":" + std::to_string(int_arg(args, 1, fn, "its index"));
        return make_str(std::move(d));
      }
      case Callable::CodecsEncode: {
        // Protocol 2's spelling of bytes: _codecs.encode(text, "latin1").
        if (args.empty() || at(args[0]).kind != Kind::Str) fail(fn, " takes a string");
        std::string encoding =
            args.size() > 1 && at(args[1]).kind == Kind::Str ? at(args[1]).s : "";
        if (encoding != "latin1" && encoding != "latin-1")
          fail(fn, ": the encoding '", encoding, "' is not latin1");
        std::vector<uint32_t> cps;
        if (!utf8_code_points(at(args[0]).s, cps)) fail(fn, ": its string is not UTF-8");
        std::string bytes;
        for (uint32_t cp : cps) {
          if (cp > 255) fail(fn, ": the code point ", cp, " is not latin1");
          bytes += static_cast<char>(cp);
        }
        return make_str(std::move(bytes), Kind::Bytes);
      }
      case Callable::Set: {
        PickleValue l;
        l.kind = Kind::List;
        if (!args.empty()) {
          if (at(args[0]).kind != Kind::List && at(args[0]).kind != Kind::Tuple)
            fail(fn, ": its argument is ", describe(out_, args[0]));
          l.items = at(args[0]).items;
        }
        return make(std::move(l));
      }
      default:
        fail(op, " calls ", name, ", which is not a function Ember rebuilds");
    }
  }

  // A persistent id: ('storage', storage type, key, location, element count).
  uint32_t persistent_load(uint32_t pid) {
    const PickleValue& p = at(pid);
    const bool shaped = p.kind == Kind::Tuple && p.items.size() == 5 &&
                        at(p.items[0]).kind == Kind::Str && at(p.items[0]).s == "storage";
    if (!shaped) fail("a persistent id that is not a storage was refused: ", describe(out_, pid));
    const std::vector<uint32_t> f = p.items;
    if (callable_of(f[1], "a storage's persistent id") != Callable::Storage)
      fail("a storage's type is ", at(f[1]).s, ", not a storage type");
    if (at(f[2]).kind != Kind::Str && at(f[2]).kind != Kind::Int)
      fail("a storage's key is ", describe(out_, f[2]));
    const std::string key = at(f[2]).kind == Kind::Str ? at(f[2]).s : std::to_string(at(f[2]).i);
    const int64_t numel = int_arg(f, 4, "a storage's persistent id", "its element count");
    const int dtype = at(f[1]).dtype;
    if (numel < 0) fail("storage '", key, "' has a negative element count ", numel);
    auto [it, fresh] = storages_.emplace(key, 0);
    if (!fresh) {
      const PickleValue& s = at(it->second);
      if (s.dtype != dtype || s.i != numel)
        fail("storage '", key, "' is named twice with different types or lengths");
      return it->second;
    }
    PickleValue s;
    s.kind = Kind::Storage;
    s.s = key;
    s.i = numel;
    s.dtype = dtype;
    it->second = make(std::move(s));
    return it->second;
  }

  uint32_t memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("the memo has no entry ", index, " (at byte ", pos_, ")");
    return it->second;
  }

  void step(unsigned char op, size_t op_at) {
    switch (op) {
      case 0x80: {  // PROTO
        const unsigned v = byte();
        if (v > 5) fail("pickle protocol ", v, " is newer than 5, the newest Python writes");
        break;
      }
      case 0x95:
        uint_le(8);
        break;  // FRAME: a length hint only
      case '(':
        marks_.push_back(stack_.size());
        break;
      case '0':
        pop("POP");
        break;
      case '1':
        pop_mark("POP_MARK");
        break;
      case '2':
        push(top("DUP"));
        break;
      case 'N':
        push(make(PickleValue{}));
        break;
      case 0x88:
        push(make_int(1, Kind::Bool));
        break;
      case 0x89:
        push(make_int(0, Kind::Bool));
        break;
      case 'I': {
        const std::string t = line();
        if (t == "01" || t == "00") {
          push(make_int(t == "01", Kind::Bool));
        } else {
          push(make_int(decimal(t, "INT")));
        }
        break;
      }
      case 'L':
        push(make_int(decimal(line(), "LONG")));
        break;
      case 'J':
        push(make_int(static_cast<int32_t>(uint_le(4))));
        break;
      case 'K':
        push(make_int(static_cast<int64_t>(uint_le(1))));
        break;
      case 'M':
        push(make_int(static_cast<int64_t>(uint_le(2))));
        break;
      case 0x8a:    // LONG1
      case 0x8b: {  // LONG4
        const uint64_t n = op == 0x8a ? uint_le(1) : uint_le(4);
        if (n > 8) fail("an integer of ", n, " bytes does not fit in 64 bits");
        need(n);
        uint64_t v = 0;
        for (uint64_t i = n; i-- > 0;) v = v << 8 | data_[pos_ + i];
        if (n > 0 && n < 8 && (data_[pos_ + n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);
        pos_ += n;
        push(make_int(static_cast<int64_t>(v)));
        break;
      }
      case 'F': {
        const std::string t = line();
        char* end = nullptr;
        PickleValue v;
        v.kind = Kind::Float;
        v.f = std::strtod(t.c_str(), &end);
        if (t.empty() || end != t.c_str() + t.size()) fail("FLOAT holds '", t.substr(0, 40), "'");
        push(make(std::move(v)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian
        need(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | data_[pos_++];
        PickleValue v;
        v.kind = Kind::Float;
        std::memcpy(&v.f, &bits, 8);
        push(make(std::move(v)));
        break;
      }
      case 'X':
        push(make_str(take(uint_le(4))));
        break;  // BINUNICODE
      case 0x8c:
        push(make_str(take(uint_le(1))));
        break;  // SHORT_BINUNICODE
      case 0x8d:
        push(make_str(take(uint_le(8))));
        break;  // BINUNICODE8
      case 'T':
        push(make_str(take(uint_le(4))));
        break;  // BINSTRING (Python 2 str)
      case 'U':
        push(make_str(take(uint_le(1))));
        break;  // SHORT_BINSTRING
      case 'B':
        push(make_str(take(uint_le(4)), Kind::Bytes));
        break;
      case 'C':
        push(make_str(take(uint_le(1)), Kind::Bytes));
        break;
      case 0x8e:
      case 0x96:
        push(make_str(take(uint_le(8)), Kind::Bytes));
        break;  // BINBYTES8, BYTEARRAY8
      case ']':
      case 0x8f: {  // EMPTY_LIST, EMPTY_SET (a set is read as a list)
        PickleValue v;
        v.kind = Kind::List;
        push(make(std::move(v)));
        break;
      }
      case ')': {
        PickleValue v;
        v.kind = Kind::Tuple;
        push(make(std::move(v)));
        break;
      }
      case '}': {
        PickleValue v;
        v.kind = Kind::Dict;
        push(make(std::move(v)));
        break;
      }
      case 'l':
      case 't':
      case 0x91: {  // LIST, TUPLE, FROZENSET
        PickleValue v;
        v.kind = op == 't' ? Kind::Tuple : Kind::List;
        v.items = pop_mark(op == 't' ? "TUPLE" : "LIST");
        push(make(std::move(v)));
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        PickleValue v;
        v.kind = Kind::Tuple;
        v.items.resize(op - 0x84u);
        for (size_t i = v.items.size(); i-- > 0;) v.items[i] = pop("TUPLEn");
        push(make(std::move(v)));
        break;
      }
      case 'd': {
        const std::vector<uint32_t> items = pop_mark("DICT");
        if (items.size() % 2) fail("DICT has an odd number of items");
        PickleValue v;
        v.kind = Kind::Dict;
        const uint32_t dict = make(std::move(v));
        for (size_t i = 0; i < items.size(); i += 2) set_item(dict, items[i], items[i + 1], "DICT");
        push(dict);
        break;
      }
      case 'a': {
        const uint32_t item = pop("APPEND");
        append(top("APPEND"), item, "APPEND");
        break;
      }
      case 'e':
      case 0x90: {  // APPENDS, ADDITEMS
        const std::vector<uint32_t> items = pop_mark("APPENDS");
        const uint32_t list = top("APPENDS");
        for (uint32_t item : items) append(list, item, "APPENDS");
        break;
      }
      case 's': {
        const uint32_t value = pop("SETITEM"), key = pop("SETITEM");
        set_item(top("SETITEM"), key, value, "SETITEM");
        break;
      }
      case 'u': {
        const std::vector<uint32_t> items = pop_mark("SETITEMS");
        if (items.size() % 2) fail("SETITEMS has an odd number of items");
        const uint32_t dict = top("SETITEMS");
        for (size_t i = 0; i < items.size(); i += 2)
          set_item(dict, items[i], items[i + 1], "SETITEMS");
        break;
      }
      case 'p':
        memo_[static_cast<uint64_t>(decimal(line(), "PUT"))] = top("PUT");
        break;
      case 'q':
        memo_[uint_le(1)] = top("BINPUT");
        break;
      case 'r':
        memo_[uint_le(4)] = top("LONG_BINPUT");
        break;
      case 0x94:
        memo_[memo_.size()] = top("MEMOIZE");
        break;
      case 'g':
        push(memo_get(static_cast<uint64_t>(decimal(line(), "GET"))));
        break;
      case 'h':
        push(memo_get(uint_le(1)));
        break;
      case 'j':
        push(memo_get(uint_le(4)));
        break;
      case 'c': {
        const std::string module = line();
        const std::string name = line();
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const uint32_t name = pop("STACK_GLOBAL"), module = pop("STACK_GLOBAL");
        if (at(name).kind != Kind::Str || at(module).kind != Kind::Str)
          fail("STACK_GLOBAL takes two strings");
        push(global(at(module).s, at(name).s));
        break;
      }
      case 'R':
      case 0x81: {  // REDUCE, NEWOBJ
        const char* name = op == 'R' ? "REDUCE" : "NEWOBJ";
        const uint32_t args = expect(pop(name), Kind::Tuple, name, "the argument");
        const uint32_t fn = pop(name);
        push(call(fn, at(args).items, name));
        break;
      }
      case 0x92: {  // NEWOBJ_EX with no keyword arguments
        const uint32_t kwargs = expect(pop("NEWOBJ_EX"), Kind::Dict, "NEWOBJ_EX", "kwargs");
        if (!at(kwargs).items.empty()) fail("NEWOBJ_EX with keyword arguments was refused");
        const uint32_t args = expect(pop("NEWOBJ_EX"), Kind::Tuple, "NEWOBJ_EX", "the argument");
        const uint32_t cls = pop("NEWOBJ_EX");
        push(call(cls, at(args).items, "NEWOBJ_EX"));
        break;
      }
      case 'b': {  // BUILD: a state dict's _metadata, a parameter's attributes: kept out
        pop("BUILD");
        const Kind k = at(top("BUILD")).kind;
        if (k != Kind::Dict && k != Kind::Tensor)
          fail("BUILD sets the state of ", describe(out_, top("BUILD")), ", which was refused");
        break;
      }
      case 'Q':
        push(persistent_load(pop("BINPERSID")));
        break;
      default:
        fail("opcode 0x", hex(op), " at byte ", op_at,
             " was refused (not one a tensor checkpoint uses: objects, extensions and out-of-band",
             " buffers are not rebuilt)");
    }
  }
  static std::string hex(unsigned char c) {
    const char* digits = "0123456789abcdef";
    return {digits[c >> 4], digits[c & 15]};
  }

  const unsigned char* data_;
  size_t size_;
  size_t pos_ = 0;
  const char* what_;
  const std::string& label_;
  Pickle out_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  std::unordered_map<uint32_t, std::unordered_map<std::string, size_t>> dict_index_;
  std::unordered_map<std::string, uint32_t> storages_;
};

std::string describe_at(const Pickle& p, uint32_t id, int depth) {
  const PickleValue& v = p.values[id];
  switch (v.kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return v.i ? "True" : "False";
    case Kind::Int:
      return std::to_string(v.i);
    case Kind::Float: {
      std::ostringstream s;
      s.precision(17);
      s << v.f;
      return s.str();
    }
    case Kind::Str:
      return "'" + (v.s.size() > 60 ? v.s.substr(0, 57) + "..." : v.s) + "'";
    case Kind::Bytes:
      return "bytes of length " + std::to_string(v.s.size());
    case Kind::Global:
      return v.s;
    case Kind::Storage:
      return "storage '" + v.s + "'";
    case Kind::Tensor:
      return "a tensor";
    case Kind::Dict:
      return "a dict of " + std::to_string(v.items.size() / 2);
    case Kind::List:
    case Kind::Tuple: {
      const bool tuple = v.kind == Kind::Tuple;
      if (depth > 2 || v.items.size() > 8)
        return std::string(tuple ? "a tuple of " : "a list of ") + std::to_string(v.items.size());
      std::string s = tuple ? "(" : "[";
      for (size_t i = 0; i < v.items.size(); ++i)
        s += (i ? ", " : "") + describe_at(p, v.items[i], depth + 1);
      if (tuple && v.items.size() == 1) s += ",";
      return s + (tuple ? ")" : "]");
    }
  }
  return "?";
}

}  // namespace

Pickle unpickle_torch(const unsigned char* data, size_t size, const char* what,
                      const std::string& label) {
  return Unpickler(data, size, what, label).run();
}

std::string describe(const Pickle& p, uint32_t v) { return describe_at(p, v, 0); }

int torch_dtype_index(const std::string& name) { return dtype_by_name_impl(name); }

}  // namespace ember::io::detail

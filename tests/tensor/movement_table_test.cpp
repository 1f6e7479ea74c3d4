// The movement part of the op table: shape and layout ops on every dtype, against float64 host
// references that move elements by index, across shapes (0-d, size-0, size-1) and layouts
// (contiguous, transposed, strided, expanded). Views must share the input's storage.
#include <climits>

#include "test_util.hpp"

namespace ember::test {
namespace {

using Idx = std::vector<int64_t>;
/// Reference value of output element `o` (row-major position `flat`) from the input `in`.
using Ref = std::function<double(const Host& in, const Idx& o, int64_t flat)>;

std::vector<double> reference(const Host& in, const Shape& out, const Ref& ref) {
  const Host shape_only{out, {}};
  std::vector<double> v(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i)
    v[static_cast<size_t>(i)] = ref(in, shape_only.index(i), i);
  return v;
}

// Random values each dtype holds exactly.
std::pair<double, double> range_for(DType dtype) {
  if (dtype == DType::u8) return {0, 200};
  if (dtype == DType::boolean) return {0, 2};
  return {-100, 100};
}
DynTensor input(const Shape& s, DType dtype, Layout layout, uint32_t seed) {
  const auto [lo, hi] = range_for(dtype);
  return make_input(s, dtype, layout, lo, hi, seed);
}
std::string what_of(const std::string& op, DType dtype, const Shape& s, Layout layout) {
  return op + " " + std::string(dtype_name(dtype)) + " " + to_string(s) + " " + layout_name(layout);
}
// Large cases (past the Cpu backend's parallel grain) run on one dtype per element size.
bool skip_large(const Shape& s, DType dtype) {
  return s.numel() > 10000 && dtype != DType::f32 && dtype != DType::f16 && dtype != DType::i8 &&
         dtype != DType::i64;
}
bool shares(const DynTensor& a, const DynTensor& b) { return a.raw().storage == b.raw().storage; }

// Python's normalisation of a slice start: negative counts from the end, then clamped.
int64_t py_start(int64_t start, int64_t n) {
  return std::clamp<int64_t>(start < 0 ? start + n : start, 0, n);
}

// Index maps: each gives the input element an output element comes from.
double same_order(const Host& in, const Idx&, int64_t flat) {
  return in.v[static_cast<size_t>(flat)];
}
Ref permuted(std::vector<int64_t> dims) {  // out dim i is input dim dims[i]
  return [dims](const Host& in, const Idx& o, int64_t) {
    Idx i(o.size());
    for (size_t k = 0; k < dims.size(); ++k) i[static_cast<size_t>(dims[k])] = o[k];
    return in.at(i);
  };
}
Ref transposed(int a, int b, int rank) {
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int k = 0; k < rank; ++k) dims[static_cast<size_t>(k)] = k;
  if (rank > 0) std::swap(dims[static_cast<size_t>(a)], dims[static_cast<size_t>(b)]);
  return permuted(dims);
}
// Broadcast (expand) or tile (repeat): input dims align with the trailing output dims.
Ref aligned(bool tile) {
  return [tile](const Host& in, const Idx& o, int64_t) {
    const size_t lead = o.size() - static_cast<size_t>(in.shape.rank());
    Idx i(static_cast<size_t>(in.shape.rank()));
    for (int k = 0; k < in.shape.rank(); ++k) {
      const int64_t ok = o[lead + static_cast<size_t>(k)];
      i[static_cast<size_t>(k)] = tile ? ok % in.shape[k] : (in.shape[k] == 1 ? 0 : ok);
    }
    return in.at(i);
  };
}
Ref sliced(int dim, int64_t start, int64_t step) {
  return [=](const Host& in, const Idx& o, int64_t) {
    Idx i = o;
    i[static_cast<size_t>(dim)] =
        py_start(start, in.shape[dim]) + o[static_cast<size_t>(dim)] * step;
    return in.at(i);
  };
}
Ref selected(int dim, int64_t index) {
  return [=](const Host& in, const Idx& o, int64_t) {
    Idx i = o;
    i.insert(i.begin() + dim, index < 0 ? index + in.shape[dim] : index);
    return in.at(i);
  };
}
Ref flipped(std::vector<int> dims) {
  return [dims](const Host& in, const Idx& o, int64_t) {
    Idx i = o;
    for (int d : dims) i[static_cast<size_t>(d)] = in.shape[d] - 1 - o[static_cast<size_t>(d)];
    return in.at(i);
  };
}
Ref padded(std::vector<int64_t> pads, PadMode mode, double value) {
  return [=](const Host& in, const Idx& o, int64_t) {
    Idx i = o;
    for (size_t p = 0; p < pads.size() / 2; ++p) {
      const int d = in.shape.rank() - 1 - static_cast<int>(p);
      const int64_t n = in.shape[d];
      int64_t j = o[static_cast<size_t>(d)] - pads[2 * p];
      if (mode == PadMode::Constant && (j < 0 || j >= n)) return value;
      if (mode == PadMode::Reflect) j = j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
      if (mode == PadMode::Replicate) j = std::clamp<int64_t>(j, 0, n - 1);
      i[static_cast<size_t>(d)] = j;
    }
    return in.at(i);
  };
}

/// Whether the result must share the input's storage.
enum class Share { View, Copy, ViewIfContiguous, Either };

struct MoveRow {
  std::string name;
  Shape in;
  std::function<DynTensor(const DynTensor&)> fn;
  Shape out;
  Ref ref;
  Share share;
  bool contiguous_only = false;  // view() of a non-contiguous layout may legitimately fail
};

constexpr int64_t kEnd = INT64_MAX;

std::vector<MoveRow> move_rows() {
  using S = Shape;
  using PM = PadMode;
  const auto pad_row = [](S in, std::vector<int64_t> p, PM mode, S out) {
    return MoveRow{
        "pad",        in, [=](auto& x) { return pad(x, p, mode, 1.0); }, out, padded(p, mode, 1.0),
        Share::Either};
  };
  return {
      {"reshape", S{2, 3, 4},
       [](auto& x) {
         return reshape(x, S{4, 6});
       },
       S{4, 6}, same_order, Share::ViewIfContiguous},
      {"reshape -1", S{2, 3, 4}, [](auto& x) { return reshape(x, S{-1}); }, S{24}, same_order,
       Share::ViewIfContiguous},
      {"reshape mid -1", S{2, 3, 4},
       [](auto& x) {
         return reshape(x, S{3, -1, 2});
       },
       S{3, 4, 2}, same_order, Share::ViewIfContiguous},
      {"reshape 0-d", S{},
       [](auto& x) {
         return reshape(x, S{1, 1});
       },
       S{1, 1}, same_order, Share::View},
      {"reshape to 0-d", S{1}, [](auto& x) { return reshape(x, S{}); }, S{}, same_order,
       Share::ViewIfContiguous},
      {"reshape empty", S{0, 3},
       [](auto& x) {
         return reshape(x, S{3, 0, 5});
       },
       S{3, 0, 5}, same_order, Share::Either},
      {"reshape size-1", S{4, 1, 5},
       [](auto& x) {
         return reshape(x, S{2, 10});
       },
       S{2, 10}, same_order, Share::ViewIfContiguous},
      {"view", S{2, 3, 4},
       [](auto& x) {
         return view(x, S{6, -1});
       },
       S{6, 4}, same_order, Share::View, true},
      {"view split", S{6},
       [](auto& x) {
         return view(x, S{2, 1, 3});
       },
       S{2, 1, 3}, same_order, Share::View, true},
      {"flatten", S{2, 3, 4}, [](auto& x) { return flatten(x); }, S{24}, same_order,
       Share::ViewIfContiguous},
      {"flatten 1..2", S{2, 3, 4}, [](auto& x) { return flatten(x, 1, 2); }, S{2, 12}, same_order,
       Share::ViewIfContiguous},
      {"flatten 0..1", S{2, 3, 4}, [](auto& x) { return flatten(x, 0, 1); }, S{6, 4}, same_order,
       Share::ViewIfContiguous},
      {"flatten -2..-1", S{2, 0, 3}, [](auto& x) { return flatten(x, -2, -1); }, S{2, 0},
       same_order, Share::Either},
      {"flatten 0-d", S{}, [](auto& x) { return flatten(x); }, S{1}, same_order, Share::View},
      {"squeeze", S{1, 3, 1, 4}, [](auto& x) { return squeeze(x); }, S{3, 4}, same_order,
       Share::View},
      {"squeeze [1]", S{1}, [](auto& x) { return squeeze(x); }, S{}, same_order, Share::View},
      {"squeeze empty", S{1, 0, 1}, [](auto& x) { return squeeze(x); }, S{0}, same_order,
       Share::View},
      {"squeeze 0-d", S{}, [](auto& x) { return squeeze(x); }, S{}, same_order, Share::View},
      {"squeeze dim", S{1, 3, 1, 4}, [](auto& x) { return squeeze(x, 2); }, S{1, 3, 4}, same_order,
       Share::View},
      {"squeeze -4", S{1, 3, 1, 4}, [](auto& x) { return squeeze(x, -4); }, S{3, 1, 4}, same_order,
       Share::View},
      {"squeeze non-1", S{1, 3, 1, 4}, [](auto& x) { return squeeze(x, 1); }, S{1, 3, 1, 4},
       same_order, Share::View},
      {"squeeze 0-d dim", S{}, [](auto& x) { return squeeze(x, -1); }, S{}, same_order,
       Share::View},
      {"unsqueeze 0", S{3, 4}, [](auto& x) { return unsqueeze(x, 0); }, S{1, 3, 4}, same_order,
       Share::View},
      {"unsqueeze 1", S{3, 4}, [](auto& x) { return unsqueeze(x, 1); }, S{3, 1, 4}, same_order,
       Share::View},
      {"unsqueeze -1", S{3, 4}, [](auto& x) { return unsqueeze(x, -1); }, S{3, 4, 1}, same_order,
       Share::View},
      {"unsqueeze -3", S{3, 4}, [](auto& x) { return unsqueeze(x, -3); }, S{1, 3, 4}, same_order,
       Share::View},
      {"unsqueeze 0-d", S{}, [](auto& x) { return unsqueeze(x, -1); }, S{1}, same_order,
       Share::View},
      {"unsqueeze empty", S{0, 2}, [](auto& x) { return unsqueeze(x, 1); }, S{0, 1, 2}, same_order,
       Share::View},
      {"transpose", S{3, 4}, [](auto& x) { return transpose(x, 0, 1); }, S{4, 3},
       transposed(0, 1, 2), Share::View},
      {"transpose 0,2", S{2, 3, 4}, [](auto& x) { return transpose(x, 0, 2); }, S{4, 3, 2},
       transposed(0, 2, 3), Share::View},
      {"transpose -1,-2", S{2, 3, 4}, [](auto& x) { return transpose(x, -1, -2); }, S{2, 4, 3},
       transposed(2, 1, 3), Share::View},
      {"transpose same", S{2, 3, 4}, [](auto& x) { return transpose(x, 1, 1); }, S{2, 3, 4},
       same_order, Share::View},
      {"transpose empty", S{5, 0}, [](auto& x) { return transpose(x, 0, 1); }, S{0, 5},
       transposed(0, 1, 2), Share::View},
      {"transpose 0-d", S{}, [](auto& x) { return transpose(x, 0, -1); }, S{}, same_order,
       Share::View},
      {"permute", S{2, 3, 4},
       [](auto& x) {
         return permute(x, {2, 0, 1});
       },
       S{4, 2, 3}, permuted({2, 0, 1}), Share::View},
      {"permute neg", S{2, 3, 4},
       [](auto& x) {
         return permute(x, {-2, -1, 0});
       },
       S{3, 4, 2}, permuted({1, 2, 0}), Share::View},
      {"permute empty", S{2, 0, 3},
       [](auto& x) {
         return permute(x, {2, 1, 0});
       },
       S{3, 0, 2}, permuted({2, 1, 0}), Share::View},
      {"permute 1-d", S{5}, [](auto& x) { return permute(x, {0}); }, S{5}, same_order, Share::View},
      {"permute 0-d", S{}, [](auto& x) { return permute(x, {}); }, S{}, same_order, Share::View},
      {"expand", S{3, 1},
       [](auto& x) {
         return expand(x, S{3, 4});
       },
       S{3, 4}, aligned(false), Share::View},
      {"expand lead -1", S{1, 4},
       [](auto& x) {
         return expand(x, S{2, 3, -1});
       },
       S{2, 3, 4}, aligned(false), Share::View},
      {"expand 0-d", S{},
       [](auto& x) {
         return expand(x, S{2, 3});
       },
       S{2, 3}, aligned(false), Share::View},
      {"expand to 0", S{1}, [](auto& x) { return expand(x, S{0}); }, S{0}, aligned(false),
       Share::View},
      {"expand mid", S{2, 1, 3},
       [](auto& x) {
         return expand(x, S{2, 5, 3});
       },
       S{2, 5, 3}, aligned(false), Share::View},
      {"broadcast_to", S{3},
       [](auto& x) {
         return broadcast_to(x, S{2, 3});
       },
       S{2, 3}, aligned(false), Share::View},
      {"slice", S{10}, [](auto& x) { return slice(x, 0, 2, 8); }, S{6}, sliced(0, 2, 1),
       Share::View},
      {"slice neg start", S{10}, [](auto& x) { return slice(x, 0, -3, kEnd); }, S{3},
       sliced(0, -3, 1), Share::View},
      {"slice clamp step 3", S{10}, [](auto& x) { return slice(x, 0, -100, 100, 3); }, S{4},
       sliced(0, -100, 3), Share::View},
      {"slice empty", S{10}, [](auto& x) { return slice(x, 0, 8, 2); }, S{0}, sliced(0, 8, 1),
       Share::View},
      {"slice neg end step 2", S{10}, [](auto& x) { return slice(x, 0, 3, -3, 2); }, S{2},
       sliced(0, 3, 2), Share::View},
      {"slice dim 1", S{4, 6}, [](auto& x) { return slice(x, 1, 1, -1, 2); }, S{4, 2},
       sliced(1, 1, 2), Share::View},
      {"slice past end", S{4, 6}, [](auto& x) { return slice(x, -2, 5, 10); }, S{0, 6},
       sliced(0, 5, 1), Share::View},
      {"slice neg both", S{4, 6}, [](auto& x) { return slice(x, 0, -2, -1); }, S{1, 6},
       sliced(0, -2, 1), Share::View},
      {"slice of empty", S{0, 5}, [](auto& x) { return slice(x, 1, 1, 4, 2); }, S{0, 2},
       sliced(1, 1, 2), Share::View},
      {"narrow", S{5, 4}, [](auto& x) { return narrow(x, 0, 1, 3); }, S{3, 4}, sliced(0, 1, 1),
       Share::View},
      {"narrow neg", S{5, 4}, [](auto& x) { return narrow(x, -1, -3, 2); }, S{5, 2},
       sliced(1, -3, 1), Share::View},
      {"narrow empty", S{5, 4}, [](auto& x) { return narrow(x, 1, 4, 0); }, S{5, 0},
       sliced(1, 4, 1), Share::View},
      {"select", S{5, 4}, [](auto& x) { return select(x, 0, 2); }, S{4}, selected(0, 2),
       Share::View},
      {"select neg", S{5, 4}, [](auto& x) { return select(x, 1, -1); }, S{5}, selected(1, -1),
       Share::View},
      {"select to 0-d", S{3}, [](auto& x) { return select(x, 0, -3); }, S{}, selected(0, -3),
       Share::View},
      {"select mid", S{2, 3, 4}, [](auto& x) { return select(x, -2, 1); }, S{2, 4}, selected(1, 1),
       Share::View},
      {"flip", S{5}, [](auto& x) { return flip(x, {0}); }, S{5}, flipped({0}), Share::Copy},
      {"flip both", S{3, 4},
       [](auto& x) {
         return flip(x, {0, 1});
       },
       S{3, 4}, flipped({0, 1}), Share::Copy},
      {"flip -1", S{3, 4}, [](auto& x) { return flip(x, {-1}); }, S{3, 4}, flipped({1}),
       Share::Copy},
      {"flip 0,2", S{2, 3, 4},
       [](auto& x) {
         return flip(x, {2, 0});
       },
       S{2, 3, 4}, flipped({0, 2}), Share::Copy},
      {"flip none", S{2, 3, 4}, [](auto& x) { return flip(x, {}); }, S{2, 3, 4}, same_order,
       Share::Copy},
      {"flip empty", S{0, 3}, [](auto& x) { return flip(x, {0}); }, S{0, 3}, flipped({0}),
       Share::Either},
      {"flip 0-d", S{}, [](auto& x) { return flip(x, {0}); }, S{}, same_order, Share::Copy},
      {"repeat", S{2, 3},
       [](auto& x) {
         return repeat(x, {2, 2});
       },
       S{4, 6}, aligned(true), Share::Copy},
      {"repeat lead", S{3},
       [](auto& x) {
         return repeat(x, {2, 1, 2});
       },
       S{2, 1, 6}, aligned(true), Share::Copy},
      {"repeat 0-d", S{},
       [](auto& x) {
         return repeat(x, {2, 3});
       },
       S{2, 3}, aligned(true), Share::Copy},
      {"repeat zero", S{2, 3},
       [](auto& x) {
         return repeat(x, {0, 2});
       },
       S{0, 6}, aligned(true), Share::Either},
      {"repeat size-1", S{2, 1, 3},
       [](auto& x) {
         return repeat(x, {1, 4, 1});
       },
       S{2, 4, 3}, aligned(true), Share::Copy},
      {"repeat ones", S{2, 3},
       [](auto& x) {
         return repeat(x, {1, 1});
       },
       S{2, 3}, same_order, Share::Copy},
      {"contiguous", S{3, 4}, [](auto& x) { return contiguous(x); }, S{3, 4}, same_order,
       Share::ViewIfContiguous},
      {"contiguous 3-d", S{2, 3, 4}, [](auto& x) { return contiguous(x); }, S{2, 3, 4}, same_order,
       Share::ViewIfContiguous},
      {"contiguous 0-d", S{}, [](auto& x) { return contiguous(x); }, S{}, same_order, Share::View},
      pad_row(S{5}, {2, 3}, PM::Constant, S{10}),
      pad_row(S{5}, {-1, 2}, PM::Constant, S{6}),
      pad_row(S{3, 4}, {1, 2, 2, 1}, PM::Constant, S{6, 7}),
      pad_row(S{3, 4}, {-2, 1, 0, -1}, PM::Constant, S{2, 3}),
      pad_row(S{3, 4}, {-1, 2, 1, -2}, PM::Constant, S{2, 5}),
      pad_row(S{2, 3, 4}, {1, 1, 1, 1, 1, 1}, PM::Constant, S{4, 5, 6}),
      pad_row(S{2, 3, 4}, {0, 0, 0, 0, 2, 0}, PM::Constant, S{4, 3, 4}),
      pad_row(S{0, 3}, {1, 1, 2, 0}, PM::Constant, S{2, 5}),
      pad_row(S{3, 4}, {}, PM::Constant, S{3, 4}),
      pad_row(S{2, 5}, {2, 3}, PM::Reflect, S{2, 10}),
      pad_row(S{2, 3, 4}, {1, 2, 2, 1}, PM::Reflect, S{2, 6, 7}),
      pad_row(S{2, 3, 4, 5}, {1, 1, 2, 2, 0, 2}, PM::Reflect, S{2, 5, 8, 7}),
      pad_row(S{2, 5}, {0, 0}, PM::Reflect, S{2, 5}),
      pad_row(S{2, 5}, {3, 1}, PM::Replicate, S{2, 9}),
      pad_row(S{2, 3, 4}, {0, 2, 1, 3}, PM::Replicate, S{2, 7, 6}),
      pad_row(S{1, 3, 4, 2}, {1, 1, 1, 1, 2, 2}, PM::Replicate, S{1, 7, 6, 4}),
      pad_row(S{2, 1}, {2, 2}, PM::Replicate, S{2, 5}),
      // Past the parallel grain.
      {"flip large", S{300, 400},
       [](auto& x) {
         return flip(x, {0, 1});
       },
       S{300, 400}, flipped({0, 1}), Share::Copy},
      {"repeat large", S{100, 200},
       [](auto& x) {
         return repeat(x, {2, 3});
       },
       S{200, 600}, aligned(true), Share::Copy},
      {"contiguous large", S{300, 400}, [](auto& x) { return contiguous(x); }, S{300, 400},
       same_order, Share::ViewIfContiguous},
      {"reshape large", S{300, 400}, [](auto& x) { return reshape(x, S{-1}); }, S{120000},
       same_order, Share::ViewIfContiguous},
      pad_row(S{300, 400}, {2, 3, 1, -1}, PM::Constant, S{300, 405}),
      pad_row(S{300, 400}, {2, 3, 1, 1}, PM::Reflect, S{302, 405}),
  };
}

TEST(MovementTable, EveryOpDtypeShapeLayout) {
  uint32_t seed = 1;
  for (const MoveRow& row : move_rows()) {
    for (DType dtype : kAllTypes) {
      if (skip_large(row.in, dtype)) continue;
      for (Layout layout : kLayouts) {
        if (row.contiguous_only && layout != Layout::Contiguous) continue;
        const DynTensor x = input(row.in, dtype, layout, seed++);
        const Host hx = Host::of(x);
        const std::string what = what_of(row.name, dtype, row.in, layout);
        DynTensor y;
        try {
          y = row.fn(x);
        } catch (const Error& e) {
          ADD_FAILURE() << what << " threw: " << e.what();
          continue;
        }
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, row.out, reference(hx, row.out, row.ref), {0, 0}, what);
        if (row.share == Share::View ||
            (row.share == Share::ViewIfContiguous && x.is_contiguous())) {
          EXPECT_TRUE(shares(x, y)) << what << ": expected a view";
        }
        if (row.share == Share::Copy) {
          EXPECT_FALSE(shares(x, y)) << what << ": expected a copy";
        }
        EXPECT_EQ(Host::of(x).v, hx.v) << what << ": the input changed";
      }
    }
  }
}

TEST(MovementTable, ReshapeCopiesOnlyWhenItMust) {
  for (DType dtype : kAllTypes) {
    const DynTensor t = input(Shape{3, 4}, dtype, Layout::Transposed, 7);  // strides (1, 3)
    const Host ht = Host::of(t);
    const DynTensor flat = reshape(t, Shape{12});
    EXPECT_FALSE(shares(t, flat)) << "a transposed tensor cannot be flattened in place";
    EXPECT_TRUE(flat.is_contiguous());
    expect_close(flat, Shape{12}, ht.v, {0, 0}, "reshape transposed");
    EXPECT_TRUE(shares(t, reshape(t, Shape{3, 1, 4, 1}))) << "size-1 dims only: a view";
    expect_close(reshape(t, Shape{3, 1, 4, 1}), Shape{3, 1, 4, 1}, ht.v, {0, 0},
                 "reshape unsqueeze");

    const DynTensor s =
        slice(input(Shape{4, 6}, dtype, Layout::Contiguous, 8), 1, 1, 4);  // strides (6, 1)
    EXPECT_TRUE(shares(s, reshape(s, Shape{2, 2, 3}))) << "splitting the outer dim is a view";
    EXPECT_TRUE(shares(s, view(s, Shape{2, 2, 3})));
    EXPECT_FALSE(shares(s, reshape(s, Shape{12})));
    expect_close(reshape(s, Shape{12}), Shape{12}, Host::of(s).v, {0, 0}, "reshape strided");

    const DynTensor e = input(Shape{3, 4}, dtype, Layout::Expanded, 9);  // strides (0, 1)
    EXPECT_FALSE(shares(e, reshape(e, Shape{12})));
    expect_close(reshape(e, Shape{12}), Shape{12}, Host::of(e).v, {0, 0}, "reshape expanded");
    EXPECT_TRUE(shares(e, reshape(e, Shape{3, 2, 2}))) << "splitting the inner dim is a view";

    const DynTensor c = contiguous(t);
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_FALSE(shares(c, t));
    EXPECT_TRUE(shares(c, contiguous(c)));
  }
}

TEST(MovementTable, ViewFailsWhenStridesForbid) {
  const DynTensor t = input(Shape{3, 4}, DType::f32, Layout::Transposed, 10);
  try {
    (void)view(t, Shape{12});
    ADD_FAILURE() << "view of a transposed tensor as [12] should fail";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[view]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reshape"), std::string::npos)
        << "the error should point to reshape: " << msg;
  }
  EXPECT_THROW((void)view(input(Shape{3, 4}, DType::i8, Layout::Expanded, 11), Shape{12}), Error);
}

TEST(MovementTable, BadArgumentsAreErrors) {
  const DynTensor x = input(Shape{2, 3, 4}, DType::f32, Layout::Contiguous, 12);
  EXPECT_THROW((void)reshape(x, Shape{5, 5}), Error);
  EXPECT_THROW((void)reshape(x, Shape{-1, -1}), Error);
  EXPECT_THROW((void)reshape(x, Shape{5, -1}), Error);
  EXPECT_THROW((void)reshape(empty(Shape{0, 3}, DType::f32), Shape{0, -1}), Error);
  EXPECT_THROW((void)flatten(x, 2, 1), Error);
  EXPECT_THROW((void)squeeze(x, 3), Error);
  EXPECT_THROW((void)unsqueeze(x, 4), Error);
  EXPECT_THROW((void)transpose(x, 0, 3), Error);
  EXPECT_THROW((void)permute(x, {0, 0, 1}), Error);
  EXPECT_THROW((void)permute(x, {0, 1}), Error);
  EXPECT_THROW((void)expand(x, Shape{2, 5, 4}), Error);
  EXPECT_THROW((void)expand(x, Shape{3, 4}), Error);
  EXPECT_THROW((void)expand(x, Shape{-1, 2, 3, 4}), Error) << "-1 in a new leading dim";
  EXPECT_THROW((void)slice(x, 0, 0, 2, 0), Error);
  EXPECT_THROW((void)narrow(x, 1, 2, 2), Error);
  EXPECT_THROW((void)select(x, 2, 4), Error);
  EXPECT_THROW((void)select(x, 2, -5), Error);
  EXPECT_THROW((void)flip(x, {1, -2}), Error);
  EXPECT_THROW((void)repeat(x, {2, 2}), Error);
  EXPECT_THROW((void)pad(x, {1}), Error);
  EXPECT_THROW((void)pad(x, {2, 4}, PadMode::Reflect), Error);
  EXPECT_THROW((void)pad(x, {-1, 0}, PadMode::Replicate), Error);
  EXPECT_THROW((void)pad(x, {-3, -2}), Error);
}

// Reference concatenation of host tensors along dim d.
std::vector<double> cat_reference(const std::vector<Host>& parts, int d, const Shape& out) {
  return reference(Host{}, out, [&](const Host&, const Idx& o, int64_t) {
    Idx i = o;
    for (const Host& p : parts) {
      if (i[static_cast<size_t>(d)] < p.shape[d]) return p.at(i);
      i[static_cast<size_t>(d)] -= p.shape[d];
    }
    return std::nan("");
  });
}

struct CatCase {
  std::vector<Shape> parts;
  int64_t dim;
  Shape out;
};

TEST(MovementTable, Cat) {
  const std::vector<CatCase> cases = {
      {{Shape{2, 3}, Shape{4, 3}}, 0, Shape{6, 3}},
      {{Shape{2, 3}, Shape{2, 1}, Shape{2, 5}}, 1, Shape{2, 9}},
      {{Shape{2, 3, 4}, Shape{2, 3, 2}}, -1, Shape{2, 3, 6}},
      {{Shape{2, 0, 4}, Shape{2, 3, 4}, Shape{2, 0, 4}}, 1, Shape{2, 3, 4}},
      {{Shape{5}, Shape{1}, Shape{3}}, 0, Shape{9}},
      {{Shape{0, 3}, Shape{0, 3}}, 0, Shape{0, 3}},
      {{Shape{3, 4}}, 1, Shape{3, 4}},
      {{Shape{200, 400}, Shape{300, 400}}, 0, Shape{500, 400}},
      {{Shape{300, 100}, Shape{300, 300}}, 1, Shape{300, 400}},
  };
  uint32_t seed = 100;
  for (const CatCase& c : cases) {
    for (DType dtype : kAllTypes) {
      if (skip_large(c.out, dtype)) continue;
      for (size_t l = 0; l < kLayouts.size(); ++l) {
        std::vector<DynTensor> xs;
        std::vector<Host> hs;
        for (size_t p = 0; p < c.parts.size(); ++p) {  // parts in different layouts
          xs.push_back(input(c.parts[p], dtype, kLayouts[(l + p) % kLayouts.size()], seed++));
          hs.push_back(Host::of(xs.back()));
        }
        const int d = static_cast<int>(c.dim < 0 ? c.dim + c.out.rank() : c.dim);
        const std::string what =
            what_of("cat dim " + std::to_string(c.dim), dtype, c.parts[0], kLayouts[l]);
        const DynTensor y = cat(xs, c.dim);
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, c.out, cat_reference(hs, d, c.out), {0, 0}, what);
      }
    }
  }
}

TEST(MovementTable, CatPromotesMixedDtypes) {
  const std::vector<std::tuple<DType, DType, DType>> pairs = {
      {DType::i32, DType::f16, DType::f16},   {DType::f32, DType::f64, DType::f64},
      {DType::boolean, DType::i8, DType::i8}, {DType::f16, DType::bf16, DType::f32},
      {DType::u8, DType::i64, DType::i64},    {DType::boolean, DType::f32, DType::f32}};
  uint32_t seed = 200;
  for (const auto& [a, b, want] : pairs) {
    const DynTensor xa = input(Shape{2, 3}, a, Layout::Transposed, seed++);
    const DynTensor xb = input(Shape{2, 2}, b, Layout::Contiguous, seed++);
    const std::string what =
        "cat " + std::string(dtype_name(a)) + " + " + std::string(dtype_name(b));
    const DynTensor y = cat({xa, xb}, 1);
    EXPECT_EQ(dtype_name(y.dtype()), dtype_name(want)) << what;
    expect_close(y, Shape{2, 5}, cat_reference({Host::of(xa), Host::of(xb)}, 1, Shape{2, 5}),
                 tol_for(want), what);
  }
}

TEST(MovementTable, CatSkipsLegacyEmpty1d) {
  const DynTensor x = input(Shape{2, 3}, DType::i32, Layout::Transposed, 300);
  const DynTensor e = empty(Shape{0}, DType::i32);
  const DynTensor y = cat({e, x, e}, 1);  // [0] is skipped whatever the others' rank
  expect_close(y, Shape{2, 3}, Host::of(x).v, {0, 0}, "cat with [0] parts");
  EXPECT_THROW((void)cat({x, empty(Shape{0, 2}, DType::i32)}, 1), Error)
      << "[0, 2] is not legacy-empty";
  EXPECT_THROW((void)cat({full(Shape{}, 1, DType::f32)}, 0), Error)
      << "0-d tensors cannot be concatenated";
  EXPECT_THROW((void)cat({x, input(Shape{3, 3}, DType::i32, Layout::Contiguous, 301)}, 1), Error);
}

// Regression test (cat): PyTorch semantics, once broken here.
TEST(MovementTable, CatPromotesOverSkippedEmptyParts) {
  const DynTensor x = input(Shape{2, 3}, DType::f32, Layout::Contiguous, 302);
  EXPECT_EQ(dtype_name(cat({empty(Shape{0}, DType::f64), x}, 0).dtype()), "float64");
  EXPECT_EQ(dtype_name(cat({empty(Shape{0}, DType::i32), empty(Shape{0}, DType::f64)}, 0).dtype()),
            "float64");
}

TEST(MovementTable, Stack) {
  const std::vector<std::tuple<Shape, int64_t, Shape>> cases = {
      {Shape{}, 0, Shape{3}},           {Shape{4}, 0, Shape{3, 4}},
      {Shape{4}, -1, Shape{4, 3}},      {Shape{2, 3}, 1, Shape{2, 3, 3}},
      {Shape{2, 3}, 2, Shape{2, 3, 3}}, {Shape{0, 2}, 0, Shape{3, 0, 2}}};
  uint32_t seed = 400;
  for (const auto& [shape, dim, out] : cases) {
    for (DType dtype : kAllTypes) {
      for (Layout layout : kLayouts) {
        std::vector<DynTensor> xs;
        std::vector<Host> hs;
        for (size_t p = 0; p < 3; ++p) {
          xs.push_back(input(shape, dtype, p == 1 ? Layout::Contiguous : layout, seed++));
          hs.push_back(Host::of(xs.back()));
        }
        const int d = static_cast<int>(dim < 0 ? dim + out.rank() : dim);
        const std::string what = what_of("stack dim " + std::to_string(dim), dtype, shape, layout);
        const auto ref = [&](const Host&, const Idx& o, int64_t) {
          Idx i = o;
          i.erase(i.begin() + d);
          return hs[static_cast<size_t>(o[static_cast<size_t>(d)])].at(i);
        };
        const DynTensor y = stack(xs, dim);
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, out, reference(Host{}, out, ref), {0, 0}, what);
      }
    }
  }
  EXPECT_THROW((void)stack({empty(Shape{2}, DType::f32), empty(Shape{3}, DType::f32)}), Error);
}

// Pieces must be views of x holding the consecutive slices of the given sizes.
void expect_pieces(const std::vector<DynTensor>& got, const DynTensor& x, int d,
                   const std::vector<int64_t>& sizes, const std::string& what) {
  ASSERT_EQ(got.size(), sizes.size()) << what;
  const Host hx = Host::of(x);
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape s = x.shape();
    s[d] = sizes[k];
    expect_close(got[k], s, reference(hx, s, sliced(d, at, 1)), {0, 0},
                 what + " piece " + std::to_string(k));
    EXPECT_TRUE(shares(got[k], x)) << what << ": pieces are views";
    at += sizes[k];
  }
}

TEST(MovementTable, SplitAndChunk) {
  uint32_t seed = 500;
  for (DType dtype : kAllTypes) {
    for (Layout layout : kLayouts) {
      const std::string dt = std::string(dtype_name(dtype)) + " " + layout_name(layout);
      const DynTensor a = input(Shape{7, 3}, dtype, layout, seed++);
      const DynTensor b = input(Shape{4, 5}, dtype, layout, seed++);
      expect_pieces(split(a, 3), a, 0, {3, 3, 1}, "split 3 " + dt);
      expect_pieces(split(a, 10), a, 0, {7}, "split 10 " + dt);
      expect_pieces(split(b, 2, -1), b, 1, {2, 2, 1}, "split 2 dim -1 " + dt);
      expect_pieces(split(b, {2, 0, 3}, 1), b, 1, {2, 0, 3}, "split sizes " + dt);
      expect_pieces(split(a, std::vector<int64_t>{7}, 0), a, 0, {7}, "split one size " + dt);
      expect_pieces(chunk(a, 4), a, 0, {2, 2, 2, 1}, "chunk 4 of 7 " + dt);
      expect_pieces(chunk(a, 3), a, 0, {3, 3, 1}, "chunk 3 of 7 " + dt);
      expect_pieces(chunk(b, 3, 1), b, 1, {2, 2, 1}, "chunk 3 of 5 " + dt);
      expect_pieces(chunk(b, 4, 0), b, 0, {1, 1, 1, 1}, "chunk 4 of 4 " + dt);
      expect_pieces(chunk(b, 8, 0), b, 0, {1, 1, 1, 1}, "chunk 8 of 4 " + dt);
      const DynTensor six = input(Shape{6}, dtype, layout, seed++);
      expect_pieces(chunk(six, 4), six, 0, {2, 2, 2}, "chunk 4 of 6 " + dt);
    }
  }
  const DynTensor x = input(Shape{4, 5}, DType::f32, Layout::Contiguous, 599);
  EXPECT_THROW((void)split(x, {2, 2}, 1), Error);
  EXPECT_THROW((void)split(x, 0), Error);
  EXPECT_THROW((void)chunk(x, 0), Error);
}

// Regression test (chunk): PyTorch semantics, once broken here.
TEST(MovementTable, ChunkOfEmptyDim) {
  const DynTensor x = empty(Shape{0, 3}, DType::f32);
  EXPECT_EQ(chunk(x, 2).size(), 2u);
  EXPECT_EQ(split(x, 2).size(), 1u);  // split of a size-0 dim is one empty piece, as in PyTorch
}

// Regression test (repeat): PyTorch semantics, once broken here.
TEST(MovementTable, RepeatHighRank) {
  const Shape in{1, 2, 1, 2, 1, 2, 1}, out{1, 2, 2, 2, 1, 2, 2};
  const DynTensor x = input(in, DType::i32, Layout::Transposed, 700);
  try {
    expect_close(repeat(x, {1, 1, 2, 1, 1, 1, 2}), out, reference(Host::of(x), out, aligned(true)),
                 {0, 0}, "repeat rank 7");
  } catch (const Error& e) {
    ADD_FAILURE() << "repeat rank 7 threw: " << e.what();
  }
}

// Regression test (flatten, minor): PyTorch semantics, once broken here.
TEST(MovementTable, FlattenZeroDimChecksDims) {
  const DynTensor x = full(Shape{}, 3, DType::f32);
  EXPECT_EQ(flatten(x, 0, 0).shape(), (Shape{1}));
  EXPECT_THROW((void)flatten(x, 0, 1), Error);
}

TEST(MovementTable, PadValues) {
  // A non-integral fill in float dtypes, an integer fill in int dtypes.
  uint32_t seed = 600;
  for (DType dtype : kAllTypes) {
    const double value = dtype == DType::boolean ? 1.0 : (is_floating(dtype) ? -2.5 : 7.0);
    const DynTensor x = input(Shape{2, 3, 4}, dtype, Layout::Transposed, seed++);
    const std::vector<int64_t> pads = {2, -1, 0, 1, 1, 0};
    const Shape out{3, 4, 5};
    const std::string what = "pad value " + std::string(dtype_name(dtype));
    expect_close(pad(x, pads, PadMode::Constant, value), out,
                 reference(Host::of(x), out, padded(pads, PadMode::Constant, value)), {0, 0}, what);
  }
}

TEST(MovementTable, TypedApi) {
  const auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor<2> r = a.reshape({3, 2});
  EXPECT_EQ(r.dims(), (std::array<int64_t, 2>{3, 2}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a.reshape({-1}).dims(), (std::array<int64_t, 1>{6}));
  const Tensor<3> u = a.unsqueeze(0);
  EXPECT_EQ(u.dims(), (std::array<int64_t, 3>{1, 2, 3}));
  EXPECT_EQ(u.squeeze(0).to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(a.t().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(a.permute({1, 0}).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(a.flip({1}).to_vector<float>(), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(a.select(1, -1).to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(a.slice(1, 0, 3, 2).to_vector<float>(), (std::vector<float>{1, 3, 4, 6}));
  EXPECT_EQ(a.repeat({1, 2}).dims(), (std::array<int64_t, 2>{2, 6}));
  EXPECT_EQ(a.expand({2, 2, 3}).dims(), (std::array<int64_t, 3>{2, 2, 3}));
  EXPECT_EQ(a.flatten().to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a.pad({1, 0}, PadMode::Constant, 9).to_vector<float>(),
            (std::vector<float>{9, 1, 2, 3, 9, 4, 5, 6}));

  const auto b = Tensor<2>::from_vector<float>({7, 8}, {2, 1});
  const Tensor<2> c = cat(std::vector<Tensor<2>>{a, b}, 1);
  EXPECT_EQ(c.dims(), (std::array<int64_t, 2>{2, 4}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 3, 7, 4, 5, 6, 8}));
  const Tensor<3> s = stack(std::vector<Tensor<2>>{a, a}, 0);
  EXPECT_EQ(s.dims(), (std::array<int64_t, 3>{2, 2, 3}));
  const std::vector<Tensor<2>> parts = a.chunk(2, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].to_vector<float>(), (std::vector<float>{1, 2, 4, 5}));
  EXPECT_EQ(parts[1].to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(a.split(1, 0).size(), 2u);

  const auto i = Tensor<1, Int>::from_vector<int32_t>({3, 1, 2});
  EXPECT_EQ(i.dtype(), DType::i32);
  EXPECT_EQ(i.flip({0}).to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_THROW((void)a.reshape<3>(Shape{6}), Error) << "rank is checked against the template";
}

}  // namespace
}  // namespace ember::test

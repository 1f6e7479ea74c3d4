// ONNX's text operators on integer token ids: TfIdfVectorizer (opset 9).
//
// Host read: TfIdfVectorizer's output depends on matching the input's token ids against the
// n-gram pool, so the ids are read to the host and counted there (a host-side matcher, as ONNX
// Runtime's); the counts are then moved to the node's device, where the weighting is applied.
// String inputs (pool_strings) are not supported: Ember has no string dtype.
//
// Counting follows ONNX Runtime and the ONNX reference, which the spec leaves open in places:
// - a unigram is counted once per position, whatever max_skip_count;
// - an n-gram (n >= 2) is counted once per (start, distance) for every distance d in
//   1..max_skip_count+1, its items at start, start+d, ..., start+(n-1)d;
// - weights are applied per output coordinate (Y[j] uses weights[j]), not per pool entry as the
//   spec's prose says; the two agree when ngram_indexes is [0, 1, 2, ...].
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "registry.hpp"

namespace ember::onnx {
namespace {

enum class TfIdfMode : uint8_t { Tf, Idf, TfIdf };

struct TfIdfSpec {
  TfIdfMode mode = TfIdfMode::Tf;
  int64_t min_n = 1, max_n = 1, max_skip = 0;
  // Each n-gram of the pool with a length in [min_n, max_n] -> its coordinate in Y.
  std::map<std::vector<int64_t>, int64_t> pool;
  int64_t width = 0;            // max(ngram_indexes) + 1
  std::vector<double> weights;  // empty: all ones
};

// "[1, 2, 3]", for messages.
std::string list_text(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

int64_t required_int(const OpContext& c, const char* name) {
  c.attr(name);  // raises naming the attribute when absent
  return c.attr_int(name, 0);
}

TfIdfMode parse_mode(const OpContext& c) {
  c.attr("mode");
  const std::string m = c.attr_string("mode", "");
  if (m == "TF") return TfIdfMode::Tf;
  if (m == "IDF") return TfIdfMode::Idf;
  if (m == "TFIDF") return TfIdfMode::TfIdf;
  c.fail("attribute 'mode' must be TF, IDF or TFIDF, got '", m, "'");
}

// The pool holds the 1-grams, then the 2-grams, ...: ngram_counts[k] is where the (k+1)-grams
// start (CSR offsets), the last group running to the pool's end. Entry i of the flattened list of
// n-grams goes to coordinate ngram_indexes[i]. Only lengths in [min_n, max_n] are kept.
void read_pool(const OpContext& c, TfIdfSpec& s, const std::vector<int64_t>& indexes) {
  c.attr("ngram_counts");
  const std::vector<int64_t> counts = c.attr_ints("ngram_counts");
  const std::vector<int64_t> pool = c.attr_ints("pool_int64s");
  const auto size = int64_t(pool.size());
  size_t id = 0;  // the n-gram's position in the flattened list (ngram_indexes' index)
  for (size_t k = 0; k < counts.size(); ++k) {
    const auto n = int64_t(k + 1);
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : size;
    if (begin < 0 || end < begin || end > size) {
      c.fail("ngram_counts ", list_text(counts), " out of bounds for the ", n,
             "-grams of a pool of ", size);
    }
    if ((end - begin) % n != 0) {
      c.fail("the ", n, "-grams of the pool (items ", begin, " to ", end,
             ") are not a whole number of ", n, "-grams");
    }
    for (int64_t at = begin; at < end; at += n, ++id) {
      if (id >= indexes.size()) {
        c.fail("ngram_indexes has ", indexes.size(), " entries, fewer than the pool's n-grams");
      }
      if (n < s.min_n || n > s.max_n) continue;
      std::vector<int64_t> gram(pool.begin() + at, pool.begin() + at + n);
      if (!s.pool.emplace(std::move(gram), indexes[id]).second) {
        c.fail("pool_int64s holds the ", n, "-gram at item ", at, " twice");
      }
    }
  }
}

TfIdfSpec parse_tfidf(const OpContext& c) {
  if (c.has_attr("pool_strings")) c.fail("unsupported: string input (pool_strings)");
  if (!c.has_attr("pool_int64s")) c.fail("one of pool_int64s or pool_strings is required");
  TfIdfSpec s;
  s.mode = parse_mode(c);
  s.min_n = required_int(c, "min_gram_length");
  s.max_n = required_int(c, "max_gram_length");
  s.max_skip = required_int(c, "max_skip_count");
  if (s.min_n < 1 || s.max_n < s.min_n || s.max_skip < 0) {
    c.fail("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0, got ", s.min_n,
           ", ", s.max_n, " and ", s.max_skip);
  }
  c.attr("ngram_indexes");
  const std::vector<int64_t> indexes = c.attr_ints("ngram_indexes");
  if (indexes.empty()) c.fail("ngram_indexes is empty");
  if (*std::min_element(indexes.begin(), indexes.end()) < 0)
    c.fail("ngram_indexes must be >= 0, got ", list_text(indexes));
  s.width = *std::max_element(indexes.begin(), indexes.end()) + 1;
  read_pool(c, s, indexes);

  s.weights = c.attr_floats("weights");
  if (!s.weights.empty() && s.weights.size() != indexes.size()) {
    c.fail("weights has ", s.weights.size(), " entries, ngram_indexes ", indexes.size());
  }
  if (!s.weights.empty() && s.mode != TfIdfMode::Tf && int64_t(s.weights.size()) < s.width) {
    c.fail("weights are read per output coordinate (as ONNX Runtime reads them) but there are ",
           s.width, " coordinates and ", s.weights.size(), " weights");
  }
  return s;
}

// Adds one row's n-gram counts into `y` (s.width entries).
void count_row(const TfIdfSpec& s, const int64_t* row, int64_t len, float* y) {
  std::vector<int64_t> gram;
  for (int64_t n = s.min_n; n <= std::min(s.max_n, len); ++n) {
    // Unigrams have no gaps to skip; longer n-grams need (n-1)d <= len-1, which bounds d.
    const int64_t max_d = n == 1 ? 1 : std::min(s.max_skip + 1, std::max<int64_t>(len - 1, 0));
    for (int64_t d = 1; d <= max_d; ++d) {
      for (int64_t start = 0; start + (n - 1) * d < len; ++start) {
        gram.clear();
        for (int64_t k = 0; k < n; ++k) gram.push_back(row[start + k * d]);
        const auto hit = s.pool.find(gram);
        if (hit != s.pool.end()) y[hit->second] += 1.0f;
      }
    }
  }
}

std::vector<Value> tfidf_vectorizer(OpContext& c) {
  const TfIdfSpec s = parse_tfidf(c);
  const DynTensor& x = c.in(0);
  if (x.dtype() != DType::i32 && x.dtype() != DType::i64) {
    c.fail("input must hold int32 or int64 token ids (or strings), got ", x.dtype());
  }
  if (x.rank() > 2) c.fail("input must be [C] or [N, C], got ", x.shape());
  // A 0-d input is one row of one token, as in ONNX Runtime.
  const int64_t rows = x.rank() == 2 ? x.size(0) : 1;
  const int64_t len = x.rank() == 0 ? 1 : x.size(-1);
  // The counts are a host buffer first: keep an absurd max(ngram_indexes) a clear error.
  if (s.width > (int64_t(1) << 32) / std::max<int64_t>(rows, 1)) {
    c.fail("output of ", rows, " x ", s.width,
           " counts is too large (max(ngram_indexes) + 1 = ", s.width, ")");
  }
  const std::vector<int64_t> ids = x.to_vector<int64_t>();
  std::vector<float> counts(size_t(rows * s.width), 0.0f);
  for (int64_t r = 0; r < rows; ++r) count_row(s, ids.data() + r * len, len, &counts[r * s.width]);

  const Shape shape = x.rank() == 2 ? Shape{rows, s.width} : Shape{s.width};
  const DynTensor tf = from_data(TensorData::from(counts, shape), c.device());
  if (s.mode == TfIdfMode::Tf) return one(tf);
  if (s.weights.empty()) return one(s.mode == TfIdfMode::Idf ? clamp_max(tf, 1.0) : tf);
  const std::vector<float> w(s.weights.begin(), s.weights.begin() + s.width);
  const DynTensor weights = from_data(TensorData::from(w, Shape{s.width}), c.device());
  // IDF: a found n-gram's weight, whatever its count (where, so that 0 * inf stays 0).
  if (s.mode == TfIdfMode::Idf) return one(where(gt(tf, 0.0), weights, 0.0));
  return one(mul(tf, weights));
}

}  // namespace

void register_text_ops(Registry& r) { r.add("", "TfIdfVectorizer", tfidf_vectorizer, 9); }

}  // namespace ember::onnx

// torch.einsum as a composite: parse the equation, take diagonals for labels repeated inside an
// operand, sum away labels only one operand has, then contract the operands two at a time.
//
// Contraction order (three or more operands): greedy, as opt_einsum's "greedy" path. At each step
// the pair whose result is smallest is contracted first, preferring pairs that share a label
// (an outer product only when no pair does); ties go to the earliest pair. Each contraction is
// one batched matmul: labels in both operands and still needed later are the batch, labels in
// both and needed nowhere else are summed by the product, the rest are its rows and columns.
#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "internal.hpp"

namespace ember {
namespace {

// Labels: 'A'-'Z' are 0-25 and 'a'-'z' 26-51 (so ids sort as the implicit output orders them);
// the dims under "..." get 52, 53, ..., right-aligned across operands as they broadcast.
constexpr int kLetters = 52;

struct Term {
  std::vector<int> letters;  // label ids, in order, without the ellipsis
  int ellipsis_at = -1;      // index in `letters` where "..." stands, or -1
};

struct Operand {
  DynTensor t;
  std::vector<int> labels;  // one per dim of t
};

std::string label_name(int id) {
  if (id >= kLetters) return "...";
  return std::string(1, static_cast<char>(id < 26 ? 'A' + id : 'a' + (id - 26)));
}

class Equation {
 public:
  explicit Equation(std::string_view eq) : text_(eq) {}

  [[noreturn]] void fail(const std::string& what) const {
    detail::raise_as("einsum", what + " in equation '" + text_ + "'");
  }

  Term parse_term(std::string_view s) const {
    Term t;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (c == ' ') continue;
      if (c == '.') {
        if (s.substr(i, 3) != "..." || t.ellipsis_at >= 0) {
          fail("'.' must appear as one '...' per operand");
        }
        t.ellipsis_at = static_cast<int>(t.letters.size());
        i += 2;
      } else if (c >= 'A' && c <= 'Z') {
        t.letters.push_back(c - 'A');
      } else if (c >= 'a' && c <= 'z') {
        t.letters.push_back(26 + (c - 'a'));
      } else {
        fail(std::string("invalid subscript '") + c + "': subscripts are letters a-z, A-Z");
      }
    }
    return t;
  }

 private:
  std::string text_;
};

// The labels of an operand of `rank` dims under `term`; `ell_total` dims stand for "...".
std::vector<int> expand_term(const Term& term, int ell_here, int ell_total) {
  std::vector<int> labels;
  for (size_t i = 0; i <= term.letters.size(); ++i) {
    if (static_cast<int>(i) == term.ellipsis_at) {
      for (int k = 0; k < ell_here; ++k) labels.push_back(kLetters + ell_total - ell_here + k);
    }
    if (i < term.letters.size()) labels.push_back(term.letters[i]);
  }
  return labels;
}

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Sums `t` over the dims whose label fails `keep`, dropping them from `op.labels`.
template <class Keep>
void sum_unless(Operand& op, Keep&& keep) {
  std::vector<int64_t> dims;
  std::vector<int> kept;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (keep(op.labels[i])) {
      kept.push_back(op.labels[i]);
    } else {
      dims.push_back(static_cast<int64_t>(i));
    }
  }
  if (dims.empty()) return;
  op.t = sum(op.t, dims);
  op.labels = kept;
}

// `t` with its dims in the order of `order` (labels of t).
DynTensor permuted(const Operand& op, const std::vector<int>& order) {
  std::vector<int64_t> perm;
  for (int l : order) {
    perm.push_back(std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin());
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  return identity ? op.t : permute(op.t, perm);
}

class Planner {
 public:
  Planner(std::vector<Operand> ops, std::vector<int> output, std::vector<int64_t> sizes)
      : ops_(std::move(ops)), output_(std::move(output)), sizes_(std::move(sizes)) {}

  DynTensor run() {
    for (size_t i = 0; i < ops_.size(); ++i) {
      sum_unless(ops_[i], [&](int l) { return needed(l, {i}); });
    }
    while (ops_.size() > 1) {
      const auto [i, j] = pick_pair();
      Operand c = contract(i, j);
      ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(j));
      ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(i));
      ops_.push_back(std::move(c));
    }
    Operand& last = ops_[0];
    sum_unless(last, [&](int l) { return has(output_, l); });
    // An output label that no operand kept (defensive: broadcast it to its size).
    for (int l : output_) {
      if (!has(last.labels, l)) {
        Shape s = unsqueeze(last.t, -1).shape();
        s[s.rank() - 1] = sizes_[static_cast<size_t>(l)];
        last.t = expand(unsqueeze(last.t, -1), s);
        last.labels.push_back(l);
      }
    }
    return permuted(last, output_);
  }

 private:
  // Whether label l is in the output or an operand outside `skip`.
  bool needed(int l, std::initializer_list<size_t> skip) const {
    if (has(output_, l)) return true;
    for (size_t k = 0; k < ops_.size(); ++k) {
      if (std::find(skip.begin(), skip.end(), k) == skip.end() && has(ops_[k].labels, l)) {
        return true;
      }
    }
    return false;
  }

  std::pair<size_t, size_t> pick_pair() const {
    std::pair<size_t, size_t> best{0, 1};
    std::pair<bool, double> best_cost{true, std::numeric_limits<double>::infinity()};
    for (size_t i = 0; i < ops_.size(); ++i) {
      for (size_t j = i + 1; j < ops_.size(); ++j) {
        bool shares = false;
        double size = 1.0;
        std::vector<int> seen;
        for (const Operand* op : {&ops_[i], &ops_[j]}) {
          for (int l : op->labels) {
            if (has(seen, l)) {
              shares = true;
              continue;
            }
            seen.push_back(l);
            if (needed(l, {i, j})) size *= static_cast<double>(sizes_[static_cast<size_t>(l)]);
          }
        }
        const std::pair<bool, double> cost{!shares, size};
        if (cost < best_cost) {
          best_cost = cost;
          best = {i, j};
        }
      }
    }
    return best;
  }

  Operand contract(size_t i, size_t j) const {
    const Operand &a = ops_[i], &b = ops_[j];
    auto needed_outside = [&](int l) { return needed(l, {i, j}); };
    // Every label an operand alone has is needed elsewhere (run() summed the others, and each
    // contraction keeps only needed labels), so nothing is summed here but the shared ones.
    std::vector<int> batch, rows, cols, inner;
    for (int l : a.labels) {
      if (has(b.labels, l)) {
        (needed_outside(l) ? batch : inner).push_back(l);
      } else {
        rows.push_back(l);
      }
    }
    for (int l : b.labels) {
      if (!has(a.labels, l)) cols.push_back(l);
    }
    auto numel = [&](const std::vector<int>& ls) {
      int64_t n = 1;
      for (int l : ls) n *= sizes_[static_cast<size_t>(l)];
      return n;
    };
    std::vector<int> order_a = batch, order_b = batch;
    order_a.insert(order_a.end(), rows.begin(), rows.end());
    order_a.insert(order_a.end(), inner.begin(), inner.end());
    order_b.insert(order_b.end(), inner.begin(), inner.end());
    order_b.insert(order_b.end(), cols.begin(), cols.end());
    const int64_t nb = numel(batch), nm = numel(rows), nk = numel(inner), nn = numel(cols);
    const DynTensor a3 = reshape(permuted(a, order_a), Shape{nb, nm, nk});
    const DynTensor b3 = reshape(permuted(b, order_b), Shape{nb, nk, nn});
    Operand out;
    out.labels = batch;
    out.labels.insert(out.labels.end(), rows.begin(), rows.end());
    out.labels.insert(out.labels.end(), cols.begin(), cols.end());
    Shape shape;
    for (int l : out.labels) shape.push_back(sizes_[static_cast<size_t>(l)]);
    out.t = reshape(matmul(a3, b3), shape);
    return out;
  }

  std::vector<Operand> ops_;
  std::vector<int> output_;
  std::vector<int64_t> sizes_;
};

}  // namespace

DynTensor einsum(std::string_view equation, const std::vector<DynTensor>& operands) {
  const Equation eq(equation);
  std::string_view lhs = equation, rhs;
  const size_t arrow = equation.find("->");
  if (arrow != std::string_view::npos) {
    lhs = equation.substr(0, arrow);
    rhs = equation.substr(arrow + 2);
    if (rhs.find("->") != std::string_view::npos) eq.fail("more than one '->'");
  }
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(eq.parse_term(lhs.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size()) {
    eq.fail("the subscripts name " + std::to_string(terms.size()) + " operands, but " +
            std::to_string(operands.size()) + " were given");
  }
  // How many dims each "..." stands for, and the most of any operand.
  std::vector<int> ell(terms.size(), 0);
  int ell_total = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    detail::check_defined(operands[i], "einsum");
    if (i > 0) detail::check_same_device(operands[0], operands[i], "einsum");
    const int named = static_cast<int>(terms[i].letters.size());
    const int rank = operands[i].rank();
    if (terms[i].ellipsis_at >= 0 ? rank < named : rank != named) {
      eq.fail("operand " + std::to_string(i) + " has " + std::to_string(rank) +
              " dims but its subscripts name " + std::to_string(named));
    }
    ell[i] = terms[i].ellipsis_at >= 0 ? rank - named : 0;
    ell_total = std::max(ell_total, ell[i]);
  }

  // Sizes per label: equal, or 1 (which broadcasts).
  std::vector<int64_t> sizes(static_cast<size_t>(kLetters + ell_total), -1);
  std::array<int, kLetters> count{};
  std::vector<Operand> ops;
  for (size_t i = 0; i < terms.size(); ++i) {
    Operand op{operands[i], expand_term(terms[i], ell[i], ell_total)};
    for (int l : terms[i].letters) ++count[static_cast<size_t>(l)];
    for (size_t d = 0; d < op.labels.size(); ++d) {
      const int l = op.labels[d];
      const int64_t s = op.t.size(static_cast<int>(d));
      int64_t& known = sizes[static_cast<size_t>(l)];
      for (size_t e = 0; e < d; ++e) {
        if (op.labels[e] == l && op.t.size(static_cast<int>(e)) != s) {
          eq.fail("subscript '" + label_name(l) + "' is repeated in operand " + std::to_string(i) +
                  " with different sizes " + std::to_string(op.t.size(static_cast<int>(e))) +
                  " and " + std::to_string(s));
        }
      }
      if (known == -1 || known == 1) {
        known = s;
      } else if (s != 1 && s != known) {
        eq.fail("subscript '" + label_name(l) + "' has size " + std::to_string(s) + " in operand " +
                std::to_string(i) + ", which does not broadcast with size " +
                std::to_string(known));
      }
    }
    ops.push_back(std::move(op));
  }

  std::vector<int> output;
  if (arrow != std::string_view::npos) {
    const Term out = eq.parse_term(rhs);
    for (int l : out.letters) {
      if (count[static_cast<size_t>(l)] == 0) {
        eq.fail("output subscript '" + label_name(l) + "' appears in no input");
      }
      if (std::count(out.letters.begin(), out.letters.end(), l) > 1) {
        eq.fail("output subscript '" + label_name(l) + "' appears more than once");
      }
    }
    output = expand_term(out, out.ellipsis_at >= 0 ? ell_total : 0, ell_total);
  } else {
    // Implicit output: the "..." dims, then the labels used once, alphabetically.
    for (int k = 0; k < ell_total; ++k) output.push_back(kLetters + k);
    for (int l = 0; l < kLetters; ++l) {
      if (count[static_cast<size_t>(l)] == 1) output.push_back(l);
    }
  }

  return as_op("einsum", [&] {
    for (Operand& op : ops) {
      // A label repeated inside one operand reads its diagonal ("ii->i", "ii").
      for (bool again = true; again;) {
        again = false;
        for (size_t d = 0; d < op.labels.size() && !again; ++d) {
          for (size_t e = d + 1; e < op.labels.size(); ++e) {
            if (op.labels[d] != op.labels[e]) continue;
            const int l = op.labels[d];
            op.t = diagonal(op.t, 0, static_cast<int64_t>(d), static_cast<int64_t>(e));
            op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(e));
            op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(d));
            op.labels.push_back(l);
            again = true;
            break;
          }
        }
      }
      // A size-1 dim that broadcasts against a larger one: the operand is constant along it.
      for (size_t d = op.labels.size(); d-- > 0;) {
        if (op.t.size(static_cast<int>(d)) == 1 && sizes[static_cast<size_t>(op.labels[d])] != 1) {
          op.t = squeeze(op.t, static_cast<int64_t>(d));
          op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(d));
        }
      }
    }
    return Planner(std::move(ops), output, sizes).run();
  });
}

}  // namespace ember

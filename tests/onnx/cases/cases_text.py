# TfIdfVectorizer edge cases (run through gen.py: python3 tests/onnx/cases/gen.py tests/onnx/cases/cases_text.py):
# IDF and TFIDF with weights, skips with unigrams, trigrams, a 2-D batch, int64 ids, empty rows.
# Expected values come from tfidf_ref below, a plain n-gram counter checked first against the
# examples of ONNX's spec (whose outputs ONNX Runtime produces).
from collections import Counter
import itertools

class Floats(list):
    """A FLOATS attribute (gen.py's lists are INTS)."""

_attr_text_ints = attr_text
def attr_text(k, v):
    if isinstance(v, Floats): return f'attribute {{ name: "{k}" ' + ''.join(f'floats: {num(x)} ' for x in v) + 'type: FLOATS }'
    return _attr_text_ints(k, v)

def tfidf_ref(x, mode, min_n, max_n, skip, counts, indexes, pool, weights=None):
    """Y for one row or a batch. An n-gram is the items at s, s+d, ..., s+(n-1)d for a distance d
    in 1..skip+1; unigrams are taken once (a distance means nothing to them). Weights are read per
    output coordinate, as ONNX Runtime and ONNX's reference implementation read them."""
    x = np.asarray(x)
    if x.ndim == 2: return np.stack([tfidf_ref(r, mode, min_n, max_n, skip, counts, indexes, pool, weights) for r in x])
    bounds = list(counts) + [len(pool)]
    grams = [tuple(pool[a:a + n]) for n in range(1, len(counts) + 1) for a in range(bounds[n - 1], bounds[n], n)]
    coord = {g: indexes[i] for i, g in enumerate(grams) if min_n <= len(g) <= max_n}
    seen = Counter()
    for n in range(min_n, max_n + 1):
        for d in ([1] if n == 1 else range(1, skip + 2)):
            for s in range(len(x)):
                picks = list(range(s, len(x), d))[:n]
                if len(picks) == n: seen[tuple(int(x[p]) for p in picks)] += 1
    y = np.zeros(max(indexes) + 1, np.float64)
    for g, k in seen.items():
        if g in coord: y[coord[g]] += k
    w = np.ones_like(y) if weights is None else np.asarray(weights, np.float32)[:len(y)].astype(np.float64)
    if mode == 'IDF': y = np.where(y > 0, w, 0.0)
    if mode == 'TFIDF': y = y * w
    return y.astype(np.float32)

# The reference reproduces the spec's examples (input, skip, min_n -> output).
spec_x = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8])
spec_pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]
for skip, min_n, want in [(0, 2, [0, 0, 0, 0, 1, 1, 1]), (5, 2, [0, 0, 0, 0, 1, 3, 1]), (5, 1, [0, 3, 1, 0, 1, 3, 1])]:
    got = tfidf_ref(spec_x, 'TF', min_n, 2, skip, [0, 4], list(range(7)), spec_pool)
    assert (got == np.array(want, np.float32)).all(), (skip, min_n, got)
got = tfidf_ref(spec_x.reshape(2, 6), 'TF', 1, 2, 5, [0, 4], list(range(7)), spec_pool)
assert (got == np.array([[0, 3, 0, 0, 0, 0, 0], [0, 0, 1, 0, 1, 1, 1]], np.float32)).all(), got

def tfidf_case(name, x, mode, min_n, max_n, skip, counts, indexes, pool, weights=None):
    attrs = dict(mode=mode, min_gram_length=min_n, max_gram_length=max_n, max_skip_count=skip,
                 ngram_counts=list(counts), ngram_indexes=list(indexes), pool_int64s=list(pool))
    if weights is not None: attrs['weights'] = Floats(weights)
    y = tfidf_ref(x, mode, min_n, max_n, skip, counts, indexes, pool, weights)
    test('tfidf_' + name, [node('TfIdfVectorizer', ['x'], ['y'], **attrs)], [('x', x)], [('y', y)], 9)

# Pool: 4 unigrams, 4 bigrams, 2 trigrams; weights exact in float32.
pool = [2, 3, 5, 4,  5, 6, 7, 8, 6, 7, 3, 3,  3, 3, 3, 7, 5, 8]
counts = [0, 4, 12]
ident = list(range(10))
w = [0.5, 1.25, 2.0, 3.0, 0.75, 1.5, 4.0, 0.25, 2.5, 8.0]
x1 = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8, 3, 3], np.int32)
x2 = np.array([3, 7, 3, 5, 3, 8, 3, 3, 3, 7, 5, 8, 3], np.int32)  # trigrams at several distances
x1b = np.array([[3, 3, 3, 7, 5, 8, 6, 7], [2, 5, 6, 3, 3, 4, 7, 8]], np.int64)
# IDF: a found n-gram gives its weight, however often it is found; without weights, 1.
tfidf_case('idf_weights', x1, 'IDF', 1, 3, 2, counts, ident, pool, w)
tfidf_case('idf_noweights', x1, 'IDF', 1, 2, 0, counts, ident, pool)
# TFIDF: counts times weights; without weights, the counts.
tfidf_case('tfidf_weights', x1, 'TFIDF', 1, 3, 1, counts, ident, pool, w)
tfidf_case('tfidf_noweights_trigrams', x2, 'TFIDF', 3, 3, 3, counts, ident, pool)
# Skips with unigrams: each unigram once, the bigrams and trigrams at every distance up to 4.
tfidf_case('tf_skip3_uni_to_tri', x1, 'TF', 1, 3, 3, counts, ident, pool)
# A 2-D int64 batch, weights and a permuted, gapped ngram_indexes (TF, where weights are unused).
tfidf_case('tfidf_batch_int64', x1b, 'TFIDF', 1, 3, 2, counts, ident, pool, w)
tfidf_case('tf_batch_permuted_indexes', x1b, 'TF', 2, 3, 1, counts, [9, 8, 7, 6, 5, 4, 3, 2, 1, 11], pool)
# Rows shorter than any n-gram asked for, and rows of no items at all.
tfidf_case('tf_short_rows', np.array([[3, 3], [5, 6]], np.int64), 'TF', 3, 3, 4, counts, ident, pool)
tfidf_case('idf_empty_rows', np.zeros((2, 0), np.int64), 'IDF', 1, 2, 1, counts, ident, pool, w)

# The executor's fusions (src/import/onnx/fusion.cpp) next to the graphs they must leave alone
# (run through gen.py: python3 tests/onnx/cases/gen.py tests/onnx/cases/cases_fusion.py):
# Conv -> Relu whose inner value has one reader (fused; symmetric and asymmetric pads, a
# grouped conv), and whose inner value is also a graph output or read twice (not fused).
rng = np.random.default_rng(7)
f32 = np.float32

def conv_ref(x, w, b, pads, group=1):
    """A plain NCHW convolution in float64: pads [top, left, bottom, right], stride 1."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // group
    y = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg]
        for oc in range(g * og, (g + 1) * og):
            for i in range(kh):
                for j in range(kw):
                    y[:, oc] += np.einsum('nchw,c->nhw', xs[:, :, i:i + y.shape[2], j:j + y.shape[3]], w[oc, :, i, j])
            y[:, oc] += b[oc]
    return y

x = rng.standard_normal((2, 4, 7, 6)).astype(f32)
w = rng.standard_normal((6, 4, 3, 3)).astype(f32)
b = rng.standard_normal(6).astype(f32)
y = conv_ref(x, w, b, [1, 1, 1, 1])
relu = lambda v: np.maximum(v, 0).astype(f32)
test('fuse_conv_relu', [node('Conv', ['x', 'w', 'b'], ['c'], pads=[1, 1, 1, 1]), node('Relu', ['c'], ['y'])],
     [('x', x), ('w', w), ('b', b)], [('y', relu(y))], 13)
ya = conv_ref(x, w, b, [0, 1, 2, 0])
test('fuse_conv_relu_asymmetric_pads', [node('Conv', ['x', 'w', 'b'], ['c'], pads=[0, 1, 2, 0]), node('Relu', ['c'], ['y'])],
     [('x', x), ('w', w), ('b', b)], [('y', relu(ya))], 13)
wg = rng.standard_normal((4, 1, 3, 3)).astype(f32)
yg = conv_ref(x, wg, np.zeros(4, f32), [1, 1, 1, 1], group=4)
test('fuse_conv_relu_depthwise', [node('Conv', ['x', 'w'], ['c'], pads=[1, 1, 1, 1], group=4), node('Relu', ['c'], ['y'])],
     [('x', x), ('w', wg)], [('y', relu(yg))], 13)
# Not fused: the Conv's output is a graph output too, or another node reads it.
test('fuse_conv_output_kept', [node('Conv', ['x', 'w', 'b'], ['c'], pads=[1, 1, 1, 1]), node('Relu', ['c'], ['y'])],
     [('x', x), ('w', w), ('b', b)], [('y', relu(y)), ('c', y.astype(f32))], 13)
test('fuse_conv_two_readers', [node('Conv', ['x', 'w', 'b'], ['c'], pads=[1, 1, 1, 1]), node('Relu', ['c'], ['r']),
                               node('Add', ['c', 'r'], ['y'])],
     [('x', x), ('w', w), ('b', b)], [('y', (y + np.maximum(y, 0)).astype(f32))], 13)
# PyTorch's exported exact GELU, x * (1 + erf(x / sqrt 2)) * 0.5, with Constant nodes (fused into
# one Gelu), with its operands swapped (fused), with another divisor (not a GELU: not fused) and
# with erf's output read twice (not fused).
import math
xg = (rng.standard_normal((3, 5)) * 3).astype(f32)
erf = np.vectorize(math.erf)
def gelu_graph(divisor, swap=False, extra=False):
    nodes = [node('Constant', [], ['d'], value=np.array(divisor, f32)),
             node('Constant', [], ['one'], value=np.array(1.0, f32)),
             node('Constant', [], ['half'], value=np.array(0.5, f32)),
             node('Div', ['x', 'd'], ['q']), node('Erf', ['q'], ['e']),
             node('Add', ['one', 'e'] if swap else ['e', 'one'], ['a']),
             node('Mul', ['a', 'x'] if swap else ['x', 'a'], ['m']),
             node('Mul', ['half', 'm'] if swap else ['m', 'half'], ['y'])]
    if extra: nodes.append(node('Identity', ['e'], ['e2']))
    x64 = xg.astype(np.float64)
    e = erf(x64 / np.float64(f32(divisor)))
    outs = [('y', (x64 * (1 + e) * 0.5).astype(f32))]
    if extra: outs.append(('e2', e.astype(f32)))
    return nodes, outs
for name, args in [('fuse_gelu', (math.sqrt(2),)), ('fuse_gelu_swapped', (math.sqrt(2), True)),
                   ('fuse_gelu_other_divisor', (2.0,)), ('fuse_gelu_erf_read_twice', (math.sqrt(2), False, True))]:
    nodes, outs = gelu_graph(*args)
    test(name, nodes, [('x', xg)], outs, 17)

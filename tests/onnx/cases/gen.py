# Hand-made ONNX node tests for edge cases that libonnx-testdata lacks (reduce and control
# families: empty reductions, ties, Loop's M/cond combinations, Scan axes, sequences), written
# with protoc's text format; expected values computed with numpy. Regenerate the data folder:
#   python3 tests/onnx/cases/gen.py tests/onnx/cases/cases.py     (needs protobuf-compiler)
import numpy as np, subprocess, os, shutil, sys
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
DT = {np.float32: 1, np.int64: 7, np.int32: 6, np.bool_: 9, np.float64: 11, np.uint8: 2}

def encode(msg, text, path):
    r = subprocess.run(['protoc', f'--encode=onnx.{msg}', '-I/usr/include', 'onnx/onnx.proto'],
                       input=text.encode(), capture_output=True)
    if r.returncode: raise RuntimeError(r.stderr.decode() + text)
    open(path, 'wb').write(r.stdout)

def num(v):
    v = float(v)
    if np.isnan(v): return 'nan'
    if np.isinf(v): return 'inf' if v > 0 else '-inf'
    return repr(v)

def tensor_text(name, a):
    a = np.asarray(a)
    dt = DT[a.dtype.type]
    s = f'name: "{name}" ' + ''.join(f'dims: {d} ' for d in a.shape) + f'data_type: {dt} '
    flat = a.flatten()
    field = {1: 'float_data', 11: 'double_data', 7: 'int64_data', 6: 'int32_data', 9: 'int32_data', 2: 'int32_data'}[dt]
    for v in flat:
        s += f'{field}: {num(v) if dt in (1, 11) else int(v)} '
    return s

def attr_text(k, v):
    if isinstance(v, Graph): return f'attribute {{ name: "{k}" g {{ {v.text()} }} type: GRAPH }}'
    if isinstance(v, bool) or isinstance(v, (int, np.integer)): return f'attribute {{ name: "{k}" i: {int(v)} type: INT }}'
    if isinstance(v, float): return f'attribute {{ name: "{k}" f: {num(v)} type: FLOAT }}'
    if isinstance(v, str): return f'attribute {{ name: "{k}" s: "{v}" type: STRING }}'
    if isinstance(v, np.ndarray): return f'attribute {{ name: "{k}" t {{ {tensor_text("", v)} }} type: TENSOR }}'
    if isinstance(v, list): return f'attribute {{ name: "{k}" ' + ''.join(f'ints: {int(x)} ' for x in v) + 'type: INTS }'
    raise TypeError(v)

def node(op, ins, outs, domain='', **attrs):
    s = 'node { ' + ''.join(f'input: "{i}" ' for i in ins) + ''.join(f'output: "{o}" ' for o in outs)
    s += f'op_type: "{op}" ' + (f'domain: "{domain}" ' if domain else '')
    s += ' '.join(attr_text(k, v) for k, v in attrs.items()) + ' }'
    return s

def vi(name, kind=1, seq=False):
    t = f'tensor_type {{ elem_type: {kind} }}'
    if seq: t = f'sequence_type {{ elem_type {{ {t} }} }}'
    return f'{{ name: "{name}" type {{ {t} }} }}'

class Graph:
    def __init__(self, name, nodes, inputs, outputs):
        self.name, self.nodes, self.inputs, self.outputs = name, nodes, inputs, outputs
    def text(self):
        s = ' '.join(self.nodes) + f' name: "{self.name}" '
        s += ' '.join('input ' + v for v in self.inputs) + ' ' + ' '.join('output ' + v for v in self.outputs)
        return s

def test(name, nodes, inputs, outputs, opset, extra_opsets=()):
    """inputs/outputs: list of (name, array)."""
    d = os.path.join(OUT, 'test_x_' + name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d + '/test_data_set_0')
    g = Graph(name, nodes, [vi(n, DT[np.asarray(a).dtype.type]) for n, a in inputs],
              [vi(n, DT[np.asarray(a).dtype.type]) for n, a in outputs])
    text = f'ir_version: 8 producer_name: "gen" graph {{ {g.text()} }} opset_import {{ domain: "" version: {opset} }}'
    for dom, ver in extra_opsets: text += f' opset_import {{ domain: "{dom}" version: {ver} }}'
    encode('ModelProto', text, d + '/model.onnx')
    for i, (n, a) in enumerate(inputs): encode('TensorProto', tensor_text(n, a), f'{d}/test_data_set_0/input_{i}.pb')
    for i, (n, a) in enumerate(outputs): encode('TensorProto', tensor_text(n, a), f'{d}/test_data_set_0/output_{i}.pb')

exec(open(sys.argv[1]).read())

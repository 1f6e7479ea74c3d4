rng = np.random.default_rng(0)
f32 = np.float32
# ---- reductions over an empty set (ONNX 1.13's values) ----
x0 = np.zeros((2, 0, 4), f32)
for op, val in [('ReduceSum', 0.0), ('ReduceProd', 1.0), ('ReduceMax', -np.inf), ('ReduceMin', np.inf),
                ('ReduceL1', 0.0), ('ReduceL2', 0.0), ('ReduceSumSquare', 0.0), ('ReduceLogSum', -np.inf),
                ('ReduceLogSumExp', -np.inf), ('ReduceMean', np.nan)]:
    if op == 'ReduceSum':
        test('empty_' + op, [node('Constant', [], ['axes'], value=np.array([1], np.int64)), node(op, ['x', 'axes'], ['y'], keepdims=1)],
             [('x', x0)], [('y', np.full((2, 1, 4), val, f32))], 13)
    else:
        test('empty_' + op, [node(op, ['x'], ['y'], axes=[1], keepdims=1)], [('x', x0)], [('y', np.full((2, 1, 4), val, f32))], 13)
xi = np.zeros((3, 0), np.int32)
test('empty_ReduceMax_int', [node('ReduceMax', ['x'], ['y'], axes=[1], keepdims=0)], [('x', xi)], [('y', np.full((3,), np.iinfo(np.int32).min, np.int32))], 13)
# ---- ReduceSum 13: noop with empty axes, omitted axes input; int dtype kept ----
x = rng.integers(-5, 5, (3, 4)).astype(np.int32)
test('reduce_sum_noop_no_axes', [node('ReduceSum', ['x'], ['y'], noop_with_empty_axes=1)], [('x', x)], [('y', x)], 13)
test('reduce_sum_all_int32', [node('ReduceSum', ['x'], ['y'], keepdims=0)], [('x', x)], [('y', np.array(x.sum(), np.int32))], 13)
test('reduce_mean_int32', [node('ReduceMean', ['x'], ['y'], axes=[0], keepdims=1)], [('x', x)], [('y', np.trunc(x.mean(0, keepdims=True)).astype(np.int32))], 13)
# ---- opset 18: axes input for ReduceMax ----
xf = rng.standard_normal((3, 4, 5)).astype(f32)
test('reduce_max_18', [node('Constant', [], ['axes'], value=np.array([-1, 0], np.int64)), node('ReduceMax', ['x', 'axes'], ['y'], keepdims=0)],
     [('x', xf)], [('y', xf.max(axis=(0, 2)))], 18)
test('reduce_l2_18_noop', [node('ReduceL2', ['x'], ['y'], noop_with_empty_axes=1)], [('x', xf)], [('y', xf)], 18)
test('reduce_logsumexp_11', [node('ReduceLogSumExp', ['x'], ['y'], axes=[1])], [('x', xf)],
     [('y', np.log(np.exp(xf.astype(np.float64)).sum(1, keepdims=True)).astype(f32))], 11)
# ---- ArgMax ties ----
xt = np.array([[1, 3, 3, 2], [5, 5, 1, 5]], f32)
test('argmax_ties_last', [node('ArgMax', ['x'], ['y'], axis=1, keepdims=0, select_last_index=1)], [('x', xt)], [('y', np.array([2, 3], np.int64))], 12)
test('argmin_ties_first', [node('ArgMin', ['x'], ['y'], axis=0)], [('x', xt)], [('y', np.array([[0, 0, 1, 0]], np.int64))], 11)
# ---- TopK ----
xk = rng.standard_normal((3, 6)).astype(f32)
idx = np.argsort(-xk, axis=1, kind='stable')[:, :2]
test('topk_opset1', [node('TopK', ['x'], ['v', 'i'], k=2)], [('x', xk)], [('v', np.take_along_axis(xk, idx, 1)), ('i', idx.astype(np.int64))], 1)
idx0 = np.argsort(xk, axis=0, kind='stable')[:2]
test('topk_smallest_axis0', [node('Constant', [], ['k'], value=np.array([2], np.int64)), node('TopK', ['x', 'k'], ['v', 'i'], axis=0, largest=0)],
     [('x', xk)], [('v', np.take_along_axis(xk, idx0, 0)), ('i', idx0.astype(np.int64))], 11)
# ---- CumSum int32, exclusive + reverse, axis as int32 ----
xc = rng.integers(-5, 5, (3, 4)).astype(np.int32)
rc = np.flip(np.cumsum(np.flip(xc, 1), 1), 1) - xc
test('cumsum_excl_rev_int', [node('Constant', [], ['ax'], value=np.array(1, np.int32)), node('CumSum', ['x', 'ax'], ['y'], exclusive=1, reverse=1)],
     [('x', xc)], [('y', rc.astype(np.int32))], 14)
# ---- Loop: zero trips with a scan output; M huge and cond stopping ----
body = Graph('body', [node('Add', ['s_in', 'one'], ['s_out']), node('Identity', ['s_out'], ['scan']),
                      node('Constant', [], ['lim'], value=np.array(3.5, f32)),
                      node('Less', ['s_out', 'lim'], ['c_out'])],
             [vi('i', 7), vi('c_in', 9), vi('s_in', 1)], [vi('c_out', 9), vi('s_out', 1), vi('scan', 1)])
# Less is not mine: use the M-only form for the scan test, with cond "" (body's cond ignored)
body2 = Graph('body', [node('Add', ['s_in', 'one'], ['s_out']), node('Identity', ['s_out'], ['scan']),
                       node('Identity', ['c_in'], ['c_out'])],
              [vi('i', 7), vi('c_in', 9), vi('s_in', 1)], [vi('c_out', 9), vi('s_out', 1), vi('scan', 1)])
s0 = np.array([1.0, 2.0], f32)
test('loop_m_only', [node('Constant', [], ['one'], value=np.array(1.0, f32)), node('Loop', ['M', '', 's0'], ['s', 'scans'], body=body2)],
     [('M', np.array(3, np.int64)), ('s0', s0)], [('s', s0 + 3), ('scans', np.stack([s0 + 1, s0 + 2, s0 + 3]))], 13)
test('loop_cond_false', [node('Constant', [], ['one'], value=np.array(1.0, f32)), node('Loop', ['M', 'c', 's0'], ['s', 'scans'], body=body2)],
     [('M', np.array(np.iinfo(np.int64).max, np.int64)), ('c', np.array(False)), ('s0', s0)], [('s', s0)], 13)
# iteration number visible, cond from body (iteration numbers compared with Equal is not mine: use Identity cond)
body3 = Graph('body', [node('Cast', ['i'], ['fi'], to=1), node('Add', ['s_in', 'fi'], ['s_out']), node('Identity', ['c_in'], ['c_out'])],
              [vi('i', 7), vi('c_in', 9), vi('s_in', 1)], [vi('c_out', 9), vi('s_out', 1)])
# ---- Scan 9+: axes, directions ----
xs = rng.standard_normal((2, 3, 4)).astype(f32)   # scanned along axis 1 (3 steps), reversed
ys = rng.standard_normal((3, 4)).astype(f32)      # scanned along axis 0 forwards
sbody = Graph('sb', [node('Add', ['st', 'a'], ['t1']), node('Add', ['t1', 'b'], ['st_out']), node('Identity', ['st_out'], ['o1']),
                     node('Identity', ['a'], ['o2'])],
              [vi('st', 1), vi('a', 1), vi('b', 1)], [vi('st_out', 1), vi('o1', 1), vi('o2', 1)])
st = np.zeros((2, 4), f32)
o1 = []
for t in range(3):
    st = st + xs[:, 2 - t, :] + ys[t]
    o1.append(st)
o1 = np.stack(o1[::-1], axis=2)     # output 0: axis 2... wait shapes [2,4] -> stacked at axis 2 => [2,4,3], reversed
o2 = np.stack([xs[:, 2 - t, :] for t in range(3)], axis=-1)  # axis -1, forward
test('scan_axes_dirs', [node('Scan', ['s0', 'x', 'y'], ['s', 'o1', 'o2'], body=sbody, num_scan_inputs=2,
                             scan_input_axes=[1, 0], scan_input_directions=[1, 0], scan_output_axes=[2, -1], scan_output_directions=[1, 0])],
     [('s0', np.zeros((2, 4), f32)), ('x', xs), ('y', ys)], [('s', st), ('o1', o1), ('o2', o2)], 11)
# ---- Scan 8: batch, sequence_lens, reverse direction ----
xb = rng.standard_normal((2, 4, 3)).astype(f32)
lens = np.array([4, 2], np.int64)
b8 = Graph('b8', [node('Add', ['st', 'a'], ['st_out']), node('Identity', ['st_out'], ['o'])],
           [vi('st', 1), vi('a', 1)], [vi('st_out', 1), vi('o', 1)])
S = np.zeros((2, 3), f32); O = np.zeros((2, 4, 3), f32)
for b in range(2):
    s = np.zeros(3, f32)
    for t in range(lens[b]):
        s = s + xb[b, lens[b] - 1 - t]
        O[b, t] = s
    S[b] = s
test('scan8_lens_reverse', [node('Scan', ['lens', 's0', 'x'], ['s', 'o'], body=b8, num_scan_inputs=1, directions=[1])],
     [('lens', lens), ('s0', np.zeros((2, 3), f32)), ('x', xb)], [('s', S), ('o', O)], 8)
# ---- If with outer-scope values, If inside If ----
inner = Graph('inner', [node('Add', ['a', 'b'], ['r'])], [], [vi('r', 1)])
thn = Graph('then', [node('If', ['c2'], ['r2'], then_branch=inner, else_branch=Graph('e2', [node('Identity', ['a'], ['r3'])], [], [vi('r3', 1)]))], [], [vi('r2', 1)])
els = Graph('else', [node('Mul', ['a', 'b'], ['r4'])], [], [vi('r4', 1)])
a = rng.standard_normal(3).astype(f32); bq = rng.standard_normal(3).astype(f32)
test('if_nested_outer', [node('If', ['c'], ['y'], then_branch=thn, else_branch=els)],
     [('c', np.array(True)), ('c2', np.array(True)), ('a', a), ('b', bq)], [('y', a + bq)], 13)
test('if_else', [node('If', ['c'], ['y'], then_branch=thn, else_branch=els)],
     [('c', np.array([False])), ('c2', np.array(True)), ('a', a), ('b', bq)], [('y', a * bq)], 13)
# ---- sequences ----
xq = rng.standard_normal((3, 5)).astype(f32)
test('split_to_seq_nokeep', [node('SplitToSequence', ['x'], ['s'], axis=1, keepdims=0), node('ConcatFromSequence', ['s'], ['y'], axis=-1, new_axis=1)],
     [('x', xq)], [('y', xq)], 13)
test('split_to_seq_scalar', [node('Constant', [], ['sp'], value=np.array(2, np.int64)), node('SplitToSequence', ['x', 'sp'], ['s'], axis=1),
                             node('SequenceLength', ['s'], ['n']), node('SequenceAt', ['s', 'pos'], ['last'])],
     [('x', xq), ('pos', np.array(-1, np.int32))], [('n', np.array(3, np.int64)), ('last', xq[:, 4:5])], 13)
test('seq_erase_default', [node('SequenceConstruct', ['a', 'b', 'c'], ['s']), node('SequenceErase', ['s'], ['s2']),
                           node('SequenceErase', ['s2', 'p0'], ['s3']), node('ConcatFromSequence', ['s3'], ['y'], axis=0)],
     [('a', xq[0:1]), ('b', xq[1:2]), ('c', xq[2:3]), ('p0', np.array(0, np.int64))], [('y', xq[1:2])], 13)
test('seq_insert_neg', [node('SequenceConstruct', ['a', 'b'], ['s']), node('SequenceInsert', ['s', 'c', 'p'], ['s2']),
                        node('ConcatFromSequence', ['s2'], ['y'], axis=0)],
     [('a', xq[0:1]), ('b', xq[1:2]), ('c', xq[2:3]), ('p', np.array(-1, np.int64))], [('y', xq[[0, 2, 1]])], 13)
# ---- Optional of a tensor ----
test('optional_tensor', [node('Optional', ['x'], ['o']), node('OptionalHasElement', ['o'], ['h']), node('OptionalGetElement', ['o'], ['y'])],
     [('x', xq)], [('h', np.array(True)), ('y', xq)], 15)
test('argmax_ties_first', [node('ArgMax', ['x'], ['y'], axis=1, keepdims=1)], [('x', xt)], [('y', np.array([[1], [0]], np.int64))], 13)
test('argmin_ties_last_neg', [node('ArgMin', ['x'], ['y'], axis=-1, keepdims=0, select_last_index=1)], [('x', np.array([[1, 0, 0, 2], [1, 1, 1, 1]], f32))], [('y', np.array([2, 3], np.int64))], 13)
# Loop with M omitted: the body's condition (picked from an outer sequence by the iteration number) stops it
body4 = Graph('body', [node('Add', ['s_in', 'one'], ['s_out']), node('Identity', ['s_out'], ['scan']),
                       node('SequenceAt', ['conds', 'i'], ['c_out'])],
              [vi('i', 7), vi('c_in', 9), vi('s_in', 1)], [vi('c_out', 9), vi('s_out', 1), vi('scan', 1)])
test('loop_cond_only', [node('Constant', [], ['one'], value=np.array(1.0, f32)),
                        node('Constant', [], ['t'], value=np.array(True)), node('Constant', [], ['f'], value=np.array(False)),
                        node('SequenceConstruct', ['t', 't', 'f', 't'], ['conds']),
                        node('Loop', ['', 'c', 's0'], ['s', 'scans'], body=body4)],
     [('c', np.array(True)), ('s0', s0)], [('s', s0 + 3), ('scans', np.stack([s0 + 1, s0 + 2, s0 + 3]))], 13)
test('loop_m_and_cond', [node('Constant', [], ['one'], value=np.array(1.0, f32)),
                        node('Constant', [], ['t'], value=np.array(True)), node('Constant', [], ['f'], value=np.array(False)),
                        node('SequenceConstruct', ['t', 't', 'f', 't'], ['conds']),
                        node('Loop', ['M', 'c', 's0'], ['s', 'scans'], body=body4)],
     [('M', np.array(2, np.int64)), ('c', np.array(True)), ('s0', s0)], [('s', s0 + 2), ('scans', np.stack([s0 + 1, s0 + 2]))], 11)

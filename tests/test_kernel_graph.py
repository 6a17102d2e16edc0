"""Conformance: kernel nodes in graphs (docs/kernels.md, "Graphs").

A kernel node runs after its dependencies and before the nodes that depend
on it, in every launch of the graph; its argument values are copied when it
is recorded; the graph keeps the kernel and the buffers it names alive; a
node is checked like a launch when it is recorded.
"""
from __future__ import annotations

import numpy as np
import pytest

import hrx
from kernel_sources import compile_kernel


def test_fill_kernel_copy_in_dependency_order(device, stream):
    k = compile_kernel(device, "add_one")
    a, b = device.allocate(256), device.allocate(256)
    g = hrx.Graph(device)
    fill = g.fill(a, 40)
    first = g.kernel(k, 2, 128, (a, 256), after=[fill])
    second = g.kernel(k, (2,), (128,), (a, 256), after=[first])
    g.copy(b, a, after=[second])
    assert g.node_count == 4
    for _ in range(3):
        assert g.launch(stream) is None  # device work only
        assert set(stream.read(b).wait()) == {42}
    g.close()


def test_values_are_copied_when_recorded(device, stream):
    k = compile_kernel(device, "saxpy")
    n = 64
    x, y = device.allocate(4 * n), device.allocate(4 * n)
    stream.upload(x, np.ones(n, np.float32))
    scale = np.float32(3.0)
    g = hrx.Graph(device)
    zero = g.fill(y, 0)
    g.kernel(k, 1, n, (x, y, scale, np.int32(n)), after=[zero])
    scale = np.float32(100.0)  # the node keeps 3.0
    g.launch(stream)
    assert set(stream.read(y).wait().view(np.float32)) == {3.0}


def test_the_graph_keeps_its_kernel_and_buffers(device, stream):
    k = compile_kernel(device, "add_one")
    b = device.allocate(64)
    keep = b[0:64]
    stream.fill(b, 1)
    g = hrx.Graph(device)
    g.kernel(k, 1, 64, (b, 64))
    k.close()
    del b
    g.launch(stream)
    g.launch(stream)
    assert set(stream.read(keep).wait()) == {3}


def test_a_host_callback_sees_the_kernel_result(device, stream):
    k = compile_kernel(device, "add_one")
    b = device.allocate(64)
    stream.fill(b, 5)
    stream.synchronize()
    seen = []
    g = hrx.Graph(device)
    node = g.kernel(k, 1, 64, (b, 64))
    g.callback(lambda: seen.append(True), after=[node])
    completion = g.launch(stream)
    completion.wait()
    assert seen == [True]
    assert set(stream.read(b).wait()) == {6}


def test_a_kernel_node_is_checked_when_recorded(device, second_device):
    k = compile_kernel(device, "add_one")
    other = compile_kernel(second_device, "add_one")
    b = device.allocate(64)
    g = hrx.Graph(device)
    with pytest.raises(hrx.InvalidArgumentError, match="block.x is 0"):
        g.kernel(k, 1, 0, (b, 64))
    with pytest.raises(hrx.InvalidArgumentError, match="the kernel belongs"):
        g.kernel(other, 1, 1, (b, 64))
    if k.attributes["param_count"] is not None:  # where the runtime tells
        with pytest.raises(hrx.InvalidArgumentError,
                           match="takes 2 arguments"):
            g.kernel(k, 1, 1, (b,))
    assert g.node_count == 0

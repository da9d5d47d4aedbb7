// ort_cnn.js: ONNX Runtime (npm onnxruntime-node, CPU provider) as a peer of bench/cnn_peers.py
// (protocol: serve.h). MODEL is the ONNX file graph.py wrote from the same dequantized weights (NCHW);
// all graph optimisations on, one inter-op thread, THREADS intra-op threads. Input and output tensors
// are prepared outside the timed call. ORT_NODE_MODULES: the folder holding onnxruntime-node.
// usage: node ort_cnn.js MODEL.onnx LAYER SIZE THREADS INPUT.f32 OUTPUT.f32
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

function skip(why) {
  process.stdout.write('skip: ' + why + '\n');
  process.exit(3);
}

async function main() {
  const [model, , sizeArg, threadsArg, inPath, outPath] = process.argv.slice(2);
  const size = +sizeArg, threads = +threadsArg;
  let ort;
  try {
    ort = require(path.join(process.env.ORT_NODE_MODULES || '', 'onnxruntime-node'));
  } catch (e) {
    skip('onnxruntime-node not found (' + e.message.split('\n')[0] + ')');
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const nhwc = new Float32Array(fs.readFileSync(inPath).buffer.slice(0));
  const nchw = new Float32Array(nhwc.length);
  const hw = size * size;
  for (let p = 0; p < hw; p++) for (let c = 0; c < 3; c++) nchw[c * hw + p] = nhwc[p * 3 + c];
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', nchw, [1, 3, size, size])};
  const y = (await session.run(feeds))[session.outputNames[0]];
  const [, C, H, W] = y.dims;
  const out = new Float32Array(y.data.length);
  for (let c = 0; c < C; c++) for (let p = 0; p < H * W; p++) out[p * C + c] = y.data[c * H * W + p];
  fs.writeFileSync(outPath, Buffer.from(out.buffer));
  process.stdout.write('ready\n');
  for await (const line of readline.createInterface({input: process.stdin})) {
    if (!line.startsWith('run ')) continue;
    const times = [];
    for (let i = 0; i < +line.split(' ')[1]; i++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    process.stdout.write('ms ' + times.map((t) => t.toFixed(4)).join(' ') + '\n');
  }
}

main().catch((e) => skip(String(e.message || e).split('\n')[0]));

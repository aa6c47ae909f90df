// node export_agreement_inputs_ort.js MODEL.onnx INPUTS.safetensors EVAL.csv (NODE_PATH: a
// node_modules holding onnxruntime-node): onnxruntime on the examples myelin_export_inputs wrote,
// against `myelin eval --predictions`: same classes, and the largest logit difference.
const ort = require("onnxruntime-node");
const fs = require("fs");
(async () => {
  const [model, inputsPath, csv] = process.argv.slice(2);
  const file = fs.readFileSync(inputsPath);
  const headerSize = Number(file.readBigUInt64LE(0));
  const info = JSON.parse(file.subarray(8, 8 + headerSize).toString()).inputs;
  const data = file.subarray(8 + headerSize + info.data_offsets[0], 8 + headerSize + info.data_offsets[1]);
  const bytes = new Uint8Array(data); // a copy: typed arrays need an aligned offset
  const int64 = info.dtype === "I64";
  const values = int64 ? new BigInt64Array(bytes.buffer) : new Float32Array(bytes.buffer);
  const [n, ...rest] = info.shape;
  const per = rest.reduce((a, b) => a * b, 1);
  const rows = fs.readFileSync(csv, "utf8").trim().split("\n").slice(1).map((l) => l.split(",").slice(1).map(Number));
  const session = await ort.InferenceSession.create(model);
  let agree = 0, diff = 0;
  for (let start = 0; start < n; start += 500) {
    const b = Math.min(500, n - start);
    const x = new ort.Tensor(int64 ? "int64" : "float32", values.slice(start * per, (start + b) * per), [b, ...rest]);
    const out = (await session.run({ [session.inputNames[0]]: x }))[session.outputNames[0]].data;
    const classes = out.length / b;
    for (let i = 0; i < b; ++i) {
      const row = rows[start + i];
      let best = 0, expected = 0;
      for (let c = 0; c < classes; ++c) {
        if (out[i * classes + c] > out[i * classes + best]) best = c;
        if (row[c] > row[expected]) expected = c;
        diff = Math.max(diff, Math.abs(out[i * classes + c] - row[c]));
      }
      agree += best === expected;
    }
  }
  console.log(`onnxruntime ${ort.env.versions.common}: ${agree} of ${n} examples give the class myelin eval predicts; largest logit difference ${diff.toExponential(2)}`);
})().catch((e) => { console.error(String(e)); process.exit(1); });

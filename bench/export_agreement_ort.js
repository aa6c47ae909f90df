// node export_agreement_ort.js MODEL.onnx t10k-images.gz eval.csv (NODE_PATH: a node_modules
// holding onnxruntime-node): how often onnxruntime's class is the one `myelin eval` predicted.
const ort = require("onnxruntime-node");
const fs = require("fs"), zlib = require("zlib");
(async () => {
  const [model, images, csv] = process.argv.slice(2);
  const raw = zlib.gunzipSync(fs.readFileSync(images));
  const n = raw.readUInt32BE(4);
  const rows = fs.readFileSync(csv, "utf8").trim().split("\n").slice(1).map((l) => l.split(",").slice(1).map(Number));
  const expected = rows.map((r) => r.indexOf(Math.max(...r)));
  const session = await ort.InferenceSession.create(model);
  let agree = 0;
  for (let start = 0; start < n; start += 500) {
    const b = Math.min(500, n - start);
    const x = new Float32Array(b * 784);
    for (let i = 0; i < b * 784; ++i) x[i] = raw[16 + start * 784 + i] / 255;
    // The model's own input name ("input", or the Input node's name).
    const feeds = { [session.inputNames[0]]: new ort.Tensor("float32", x, [b, 1, 28, 28]) };
    const out = (await session.run(feeds)).output.data;
    for (let i = 0; i < b; ++i) {
      let best = 0;
      for (let c = 1; c < 10; ++c) if (out[i * 10 + c] > out[i * 10 + best]) best = c;
      agree += best === expected[start + i];
    }
  }
  console.log(`onnxruntime ${ort.env.versions.common}: ${agree} of ${n} test images give the class myelin eval predicts`);
})();

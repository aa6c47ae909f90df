// The memory pre-flight (train/memory_estimate.h): each part from its fact (parameters and
// their dtype, the optimizer record's state tensors, the analysis's activations, the data
// source's size), the verdict against a given amount of free memory (fits, close, does not fit,
// the largest batch that fits), and a model no machine holds refused by the real check.
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/train/memory_estimate.h>

#include <QtTest>

using namespace myelin;
using namespace myelin::train;

namespace {

io::Project example(const char* name) {
    return io::load_project(std::string(MYELIN_SOURCE_DIR) + "/resources/examples/" + name +
                            ".myelin");
}

int64_t part(const MemoryEstimate& e, const std::string& prefix) {
    for (const MemoryPart& p : e.parts)
        if (p.name.rfind(prefix, 0) == 0) return p.bytes;
    return -1;
}

// fashion_mlp with its first Linear made `outputs` wide (and the next one fitted to it).
io::Project wide_mlp(int64_t outputs) {
    io::Project p = example("fashion_mlp");
    int linear = 0;
    for (graph::Node& n : p.model.nodes)
        if (n.kind == "Linear") {
            if (linear == 0) n.attrs.set("out_features", outputs);
            if (linear == 1) n.attrs.set("in_features", outputs);
            ++linear;
        }
    return p;
}

} // namespace

class TestMemoryEstimate : public QObject {
    Q_OBJECT

  private slots:
    void partsComeFromTheirFacts() {
        const io::Project p = example("fashion_mlp");
        const graph::Analysis a = graph::analyze(p.model, 128);
        const MemoryEstimate e = estimate_training_memory(
            p, std::string(MYELIN_SOURCE_DIR) + "/resources/examples", 128, kCPU);
        QCOMPARE(part(e, "weights"), a.total_params * 4);
        QCOMPARE(part(e, "gradients"), a.trainable_params * 4);
        QCOMPARE(part(e, "optimizer state (Adam: 2"), a.trainable_params * 8);
        QCOMPARE(part(e, "activations saved"), a.total_activation_bytes);
        QCOMPARE(part(e, "data (fashion-mnist)"), int64_t(70000) * 785);
        QVERIFY(part(e, "runtime") > 0);
        QCOMPARE(e.total_bytes(), e.device_bytes()); // the CPU holds everything
        QCOMPARE(e.largest_layer, std::string("1")); // the 784 x 256 Linear
    }

    void optimizerStateAndPrecisionChangeTheirParts() {
        io::Project p = example("fashion_mlp");
        const int64_t params = graph::analyze(p.model, 1).trainable_params;
        auto state = [&](spec::Choice optimizer) {
            p.train.optimizer = std::move(optimizer);
            return part(estimate_training_memory(p, ".", 8, kCPU), "optimizer state");
        };
        QCOMPARE(state({"SGD", {}}), int64_t(0));
        QCOMPARE(state({"SGD", {{"momentum", 0.9}}}), params * 4);
        QCOMPARE(state({"AdamW", {{"amsgrad", true}}}), params * 12);
        QCOMPARE(state({"RMSprop", {{"momentum", 0.9}, {"centered", true}}}), params * 12);
        p.train.optimizer = {"Adam", {}};
        const int64_t full = part(estimate_training_memory(p, ".", 64, kCPU), "activations saved");
        p.train.precision = myelin::spec::Precision::BFloat16;
        QCOMPARE(part(estimate_training_memory(p, ".", 64, kCPU), "activations saved"), full / 2);
    }

    void verdictAgainstWhatIsFree() {
        const io::Project p = example("fashion_cnn");
        const std::string dir = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";
        const MemoryEstimate e = estimate_training_memory(p, dir, 128, kCPU);
        const int64_t need = e.total_bytes();
        MemoryVerdict v = check_training_memory(e, {need * 4, "test"}, p, dir);
        QCOMPARE(v.fit, MemoryFit::Fits);
        QVERIFY(v.message.empty());
        v = check_training_memory(e, {need + need / 10, "test"}, p, dir);
        QCOMPARE(v.fit, MemoryFit::Close);
        QVERIFY2(QString::fromStdString(v.message).contains("other programs"), v.message.c_str());
        v = check_training_memory(e, {need * 7 / 10, "test"}, p, dir);
        QCOMPARE(v.fit, MemoryFit::DoesNotFit);
        const QString message = QString::fromStdString(v.message);
        QVERIFY2(message.contains("more than there is") && message.contains("a batch size of"),
                 v.message.c_str());
        // The largest batch that fits is the last within 90% of what is free.
        QVERIFY(v.largest_batch >= 1 && v.largest_batch < 128);
        const int64_t budget = int64_t(0.9 * double(need * 7 / 10));
        QVERIFY(estimate_training_memory(p, dir, v.largest_batch, kCPU).total_bytes() <= budget);
        QVERIFY(estimate_training_memory(p, dir, v.largest_batch + 1, kCPU).total_bytes() > budget);
    }

    // A trillion parameters (16 TB with Adam): more than any machine has, refused by the real
    // check, naming the need, the machine's free memory and the largest layer.
    void aModelNoMachineHoldsIsRefused() {
        io::Project p = wide_mlp(1'300'000'000); // 784 x 1.3e9 + 1.3e9 x 128
        const MemoryVerdict v = check_training_memory(p, ".", 128, kCPU);
        QVERIFY(v.available.bytes > 0); // /proc/meminfo read
        QCOMPARE(v.fit, MemoryFit::DoesNotFit);
        QCOMPARE(v.largest_batch, int64_t(0));
        const QString message = QString::fromStdString(v.message);
        for (const char* part : {"needs about", "TB", "this machine has", "no batch size fits",
                                 "the largest layer, '1'"})
            QVERIFY2(message.contains(part), v.message.c_str());
    }

    void invalidInputIsRefused() {
        io::Project p = example("fashion_mlp");
        QVERIFY_THROWS_EXCEPTION(Error, estimate_training_memory(p, ".", 0, kCPU));
        p.model.nodes[2].attrs.set("in_features", int64_t(5)); // does not fit the input
        QVERIFY_THROWS_EXCEPTION(Error, estimate_training_memory(p, ".", 8, kCPU));
    }
};

QTEST_GUILESS_MAIN(TestMemoryEstimate)
#include "test_memory_estimate.moc"

// Data-parallel pieces checked in one process (issue 19): the overlap path's fallback for a
// shared weight (its gradient hook runs twice) and an unused one (never runs) gives the same
// averages as averaging after backward; sync_batch_norm with one rank is batch_norm; the
// project key training.distributed.sync_batchnorm reads and writes (only when on).
#include "blobs_project.h"

#include <myelin/autograd.h>
#include <myelin/dist/communicator.h>
#include <myelin/dist/tensor_collectives.h>
#include <myelin/generator.h>
#include <myelin/io/project.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/sync_batch_norm.h>
#include <myelin/tensor.h>

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

using namespace myelin;

namespace {

// Two ranks as seen from rank 0: the other rank's contribution to every allreduce is a fixed
// function of the element's position (so the result does not depend on the order in which
// buckets are started), and started collectives complete only when waited for or tested.
class TwoRanksFake final : public dist::Communicator {
  public:
    int rank() const override { return 0; }
    int size() const override { return 2; }
    std::string backend() const override { return "fake"; }
    std::unique_ptr<dist::PendingCollective> start_allreduce_sum(void* data, int64_t count,
                                                                 DType dtype) override {
        struct Pending final : dist::PendingCollective {
            void* data;
            int64_t count;
            DType dtype;
            bool done = false;
            bool test() override {
                if (!done) add_other_rank();
                return done = true;
            }
            void wait() override { test(); }
            void add_other_rank() {
                for (int64_t i = 0; i < count; ++i) {
                    const double other = 0.25 * double(i % 7) - 0.5;
                    if (dtype == DType::Float32)
                        static_cast<float*>(data)[i] += float(other);
                    else
                        static_cast<double*>(data)[i] += other;
                }
            }
        };
        auto p = std::make_unique<Pending>();
        p->data = data;
        p->count = count;
        p->dtype = dtype;
        ++started;
        return p;
    }
    void broadcast(void*, int64_t, int) override {}
    std::vector<std::string> allgather_string(const std::string& text) override {
        return {text, text};
    }
    void report_failure(const std::string&) noexcept override {}
    [[noreturn]] void abort(int code) noexcept override { std::_Exit(code); }
    int started = 0;
};

struct SharedModel {
    Tensor shared, unused, scale;
    std::vector<Tensor> params() const { return {scale, shared, unused}; }
};

SharedModel makeModel() {
    Generator gen(9);
    return {randn({3, 4}, {}, &gen).requires_grad_(), randn({2}, {}, &gen).requires_grad_(),
            randn({4}, {}, &gen).requires_grad_()};
}

// The shared weight is used twice in one graph (x W^T W: the engine sums both uses before its
// hook runs, once); with `second_backward` a second loss's backward in the same step reaches it
// again (its hook runs twice: the fallback). The unused one is never reached.
void backwardStep(const SharedModel& m, bool second_backward) {
    Generator gen(4);
    const Tensor x = randn({5, 4}, {}, &gen);
    const Tensor y = x.matmul(m.shared.t()).matmul(m.shared);
    (y * m.scale).sum().backward();
    if (second_backward) (x.matmul(m.shared.t()).pow(2.0).sum() * 0.5).backward();
}

std::vector<std::vector<float>> grads(const SharedModel& m) {
    std::vector<std::vector<float>> out;
    for (const Tensor& p : m.params())
        out.push_back(p.grad().defined() ? p.grad().to_vector<float>() : std::vector<float>{});
    return out;
}

} // namespace

class TestDistHooks : public QObject {
    Q_OBJECT

  private slots:
    void overlapFallbackForSharedAndUnusedWeights();
    void syncBatchNormAloneIsBatchNorm();
    void projectKeyReadsAndWrites();
};

void TestDistHooks::overlapFallbackForSharedAndUnusedWeights() {
    for (const bool second_backward : {false, true})
        for (const int64_t bucket_bytes : {int64_t(16), int64_t(1) << 20}) { // one each, or one
            TwoRanksFake comm;
            // Averaged after backward.
            SharedModel a = makeModel();
            backwardStep(a, second_backward);
            dist::GradientBuckets after(a.params(), bucket_bytes);
            after.average(comm);

            // Overlapped: every parameter's gradient hook hands its gradient to the buckets, as
            // train::DataParallel does.
            SharedModel b = makeModel();
            dist::GradientBuckets overlapped(b.params(), bucket_bytes);
            std::vector<HookHandle> hooks;
            const std::vector<Tensor> params = b.params();
            std::vector<int> calls(params.size(), 0);
            for (size_t k = 0; k < params.size(); ++k)
                hooks.push_back(params[k].register_hook([&, k](const Tensor& incoming) {
                    ++calls[k];
                    overlapped.gradient_ready(k, incoming, comm);
                    return Tensor();
                }));
            overlapped.begin_step();
            backwardStep(b, second_backward);
            overlapped.finish(comm);
            for (auto& h : hooks)
                h.remove();
            // scale once; shared once per backward that reaches it; unused never.
            QCOMPARE(calls, (std::vector<int>{1, second_backward ? 2 : 1, 0}));
            // A started bucket whose parameter's hook ran again (the shared weight alone in its
            // bucket, second backward) is redone from .grad and turns overlap off for the run;
            // a bucket never filled (it holds the unused weight) is packed after backward.
            QCOMPARE(overlapped.overlapped(), !(second_backward && bucket_bytes == 16));
            const auto ga = grads(a), gb = grads(b);
            QCOMPARE(gb, ga); // bit for bit
            // The unused weight (first in reverse order: offset 0 of its bucket) received the
            // average of its zeros and the other rank's values (-0.5, -0.25).
            QCOMPARE(ga[2], (std::vector<float>{-0.25f, -0.125f}));
        }
    // Every parameter reached once: the overlap stays on and gives the same bits.
    TwoRanksFake comm;
    SharedModel a = makeModel(), b = makeModel();
    const std::vector<Tensor> pa = {a.scale, a.shared}, pb = {b.scale, b.shared};
    backwardStep(a, false);
    dist::GradientBuckets after(pa, 16), overlapped(pb, 16);
    after.average(comm);
    std::vector<HookHandle> hooks;
    for (size_t k = 0; k < pb.size(); ++k)
        hooks.push_back(pb[k].register_hook([&, k](const Tensor& incoming) {
            overlapped.gradient_ready(k, incoming, comm);
            return Tensor();
        }));
    overlapped.begin_step();
    backwardStep(b, false);
    overlapped.finish(comm);
    for (auto& h : hooks)
        h.remove();
    QVERIFY(overlapped.overlapped());
    QCOMPARE(overlapped.timing().buckets_started_in_backward, int64_t(2));
    QCOMPARE(b.scale.grad().to_vector<float>(), a.scale.grad().to_vector<float>());
    QCOMPARE(b.shared.grad().to_vector<float>(), a.shared.grad().to_vector<float>());
}

void TestDistHooks::syncBatchNormAloneIsBatchNorm() {
    Generator gen(3);
    const Tensor x0 = randn({6, 3, 2, 2}, {}, &gen) * 2.0 + 1.0;
    const Tensor w0 = randn({3}, {}, &gen), b0 = randn({3}, {}, &gen);
    Tensor rm_a = zeros({3}), rv_a = ones({3}), rm_b = zeros({3}), rv_b = ones({3});
    int calls = 0;
    const nn::StatsReducer alone = [&calls](double*, int64_t) { ++calls; };
    Tensor xa = x0.clone().requires_grad_(), wa = w0.clone().requires_grad_(),
           ba = b0.clone().requires_grad_();
    Tensor xb = x0.clone().requires_grad_(), wb = w0.clone().requires_grad_(),
           bb = b0.clone().requires_grad_();
    const Tensor g = randn({6, 3, 2, 2}, {}, &gen);
    (nn::functional::batch_norm(xa, rm_a, rv_a, wa, ba, true, 0.1, 1e-5) * g).sum().backward();
    (nn::functional::sync_batch_norm(xb, rm_b, rv_b, wb, bb, 0.1, 1e-5, alone) * g)
        .sum()
        .backward();
    QCOMPARE(calls, 2); // once in forward, once in backward
    auto close = [](const Tensor& p, const Tensor& q, const char* what) {
        const auto a = p.to_vector<float>(), b = q.to_vector<float>();
        for (size_t i = 0; i < a.size(); ++i)
            QVERIFY2(std::abs(a[i] - b[i]) <= 2e-6f * (1.0f + std::abs(a[i])),
                     qPrintable(QString("%1[%2]: %3 vs %4").arg(what).arg(i).arg(a[i]).arg(b[i])));
    };
    close(xa.grad(), xb.grad(), "input gradient");
    close(wa.grad(), wb.grad(), "weight gradient");
    close(ba.grad(), bb.grad(), "bias gradient");
    close(rm_a, rm_b, "running_mean");
    close(rv_a, rv_b, "running_var");
    {
        autograd::NoGradGuard no_grad;
        close(nn::functional::batch_norm(x0, {}, {}, w0, b0, true, 0.1, 1e-5),
              nn::functional::sync_batch_norm(x0, {}, {}, w0, b0, 0.1, 1e-5, alone), "output");
    }
}

void TestDistHooks::projectKeyReadsAndWrites() {
    QTemporaryDir dir;
    const QString path = myelin::test::writeBlobsProject(dir.path(), 1);
    io::Project p = io::load_project(path.toStdString());
    QVERIFY(!p.train.distributed.sync_batchnorm);
    // Off is the default and is not written (older files stay byte for byte).
    QVERIFY(io::serialize_project(p).find("distributed") == std::string::npos);
    p.train.distributed.sync_batchnorm = true;
    const std::string text = io::serialize_project(p);
    QVERIFY(text.find("\"sync_batchnorm\": true") != std::string::npos);
    QVERIFY(io::parse_project(text).train.distributed.sync_batchnorm);
    std::string bad = text;
    bad.replace(bad.find("\"sync_batchnorm\""), 16, "\"sync_batchnrom\"");
    try {
        io::parse_project(bad, "bad.myelin");
        QFAIL("a misspelt key was accepted");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("sync_batchnrom") != std::string::npos, e.what());
    }
}

QTEST_GUILESS_MAIN(TestDistHooks)
#include "test_dist_hooks.moc"

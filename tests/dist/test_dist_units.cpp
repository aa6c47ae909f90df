// Data-parallel pieces that need no MPI: DistributedSampler's shards, launch detection, the
// --dist modes, gradient buckets and the single-process communicator.
#include <myelin/data/sampler.h>
#include <myelin/dist/communicator.h>
#include <myelin/dist/mpi.h>
#include <myelin/dist/tensor_collectives.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/tensor.h>

#include <QtTest>

#include <algorithm>
#include <map>
#include <string>

using namespace myelin;

class TestDistUnits : public QObject {
    Q_OBJECT

  private slots:
    void shardsCoverEveryIndexOncePerEpoch();
    void shardsArePaddedByWrapping();
    void dropLastCutsInsteadOfPadding();
    void oneRankKeepsTheOrder();
    void badRanksAreRefused();
    void launchDetection();
    void distModes();
    void bucketsFollowReverseParameterOrder();
    void singleProcessCollectivesAreIdentity();
};

namespace {

std::vector<int64_t> shard(int64_t n, int world, int rank, bool drop_last, uint64_t seed) {
    data::DistributedSampler s(std::make_shared<data::RandomSampler>(n), world, rank, drop_last);
    Generator gen(seed);
    auto out = s.indices(gen);
    if (int64_t(out.size()) != s.size()) throw Error("size() disagrees with indices()");
    return out;
}

} // namespace

void TestDistUnits::shardsCoverEveryIndexOncePerEpoch() {
    for (int world : {2, 3, 4}) {
        const int64_t n = 120; // divisible by 2, 3, 4: no padding
        std::map<int64_t, int> seen;
        for (int rank = 0; rank < world; ++rank)
            for (int64_t i : shard(n, world, rank, false, 7))
                ++seen[i];
        QCOMPARE(int64_t(seen.size()), n);
        for (const auto& [index, count] : seen)
            QVERIFY2(
                count == 1,
                qPrintable(
                    QString("index %1 seen %2 times, world %3").arg(index).arg(count).arg(world)));
    }
    // Rank r takes positions r, r + W, ... of the one epoch order: interleaving the shards gives
    // the single-process order back.
    data::RandomSampler all(10);
    Generator gen(9);
    const auto order = all.indices(gen);
    const auto r0 = shard(10, 2, 0, false, 9), r1 = shard(10, 2, 1, false, 9);
    for (size_t k = 0; k < 5; ++k) {
        QCOMPARE(r0[k], order[2 * k]);
        QCOMPARE(r1[k], order[2 * k + 1]);
    }
    // Another epoch (another seed) is another order, the same on every rank.
    QVERIFY(shard(10, 2, 0, false, 10) != r0);
}

void TestDistUnits::shardsArePaddedByWrapping() {
    // 10 over 3 ranks: 4 each, the two extra positions wrap to the order's first two indices.
    data::RandomSampler all(10);
    Generator gen(5);
    const auto order = all.indices(gen);
    std::map<int64_t, int> seen;
    for (int rank = 0; rank < 3; ++rank) {
        const auto s = shard(10, 3, rank, false, 5);
        QCOMPARE(s.size(), size_t(4));
        for (int64_t i : s)
            ++seen[i];
    }
    QCOMPARE(seen.size(), size_t(10)); // every index at least once
    QCOMPARE(seen[order[0]], 2);
    QCOMPARE(seen[order[1]], 2);
}

void TestDistUnits::dropLastCutsInsteadOfPadding() {
    std::map<int64_t, int> seen;
    for (int rank = 0; rank < 3; ++rank) {
        const auto s = shard(10, 3, rank, true, 5);
        QCOMPARE(s.size(), size_t(3));
        for (int64_t i : s)
            ++seen[i];
    }
    QCOMPARE(seen.size(), size_t(9)); // the last one left out, none twice
    for (const auto& [index, count] : seen)
        QCOMPARE(count, 1);
}

void TestDistUnits::oneRankKeepsTheOrder() {
    data::RandomSampler all(17);
    Generator a(3), b(3);
    QCOMPARE(shard(17, 1, 0, false, 3), all.indices(b));
    (void)a;
}

void TestDistUnits::badRanksAreRefused() {
    auto inner = std::make_shared<data::SequentialSampler>(4);
    QVERIFY_THROWS_EXCEPTION(Error, data::DistributedSampler(inner, 2, 2, false));
    QVERIFY_THROWS_EXCEPTION(Error, data::DistributedSampler(inner, 0, 0, false));
    QVERIFY_THROWS_EXCEPTION(Error, data::DistributedSampler(nullptr, 2, 0, false));
}

void TestDistUnits::launchDetection() {
    auto env = [](std::map<std::string, std::string> vars) {
        return [vars](const char* name) -> const char* {
            auto it = vars.find(name);
            return it == vars.end() ? nullptr : it->second.c_str();
        };
    };
    QVERIFY(!dist::detect_launch(env({})).detected);
    auto ompi = dist::detect_launch(env({{"OMPI_COMM_WORLD_SIZE", "4"}}));
    QVERIFY(ompi.detected);
    QCOMPARE(ompi.world_size, 4);
    QCOMPARE(ompi.launcher, std::string("OMPI_COMM_WORLD_SIZE"));
    QVERIFY(dist::detect_launch(env({{"PMIX_RANK", "0"}})).detected);
    QVERIFY(dist::detect_launch(env({{"PMI_SIZE", "2"}})).detected);
    // An sbatch script alone (no srun step) is one process; srun's tasks are a launch.
    QVERIFY(!dist::detect_launch(env({{"SLURM_NTASKS", "8"}})).detected);
    auto srun = dist::detect_launch(env({{"SLURM_NTASKS", "8"}, {"SLURM_STEP_ID", "0"}}));
    QVERIFY(srun.detected);
    QCOMPARE(srun.world_size, 8);
}

void TestDistUnits::distModes() {
    QCOMPARE(dist::parse_dist_mode("auto"), dist::DistMode::Auto);
    QCOMPARE(dist::parse_dist_mode("mpi"), dist::DistMode::Mpi);
    QCOMPARE(dist::parse_dist_mode("none"), dist::DistMode::None);
    try {
        dist::parse_dist_mode("nccl");
        QFAIL("nccl was accepted");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("'nccl'") != std::string::npos, e.what());
    }
#ifndef MYELIN_HAVE_MPI
    // A build without MPI says so (myelin train --dist mpi prints this and exits 1).
    try {
        dist::start_mpi({});
        QFAIL("start_mpi succeeded without MPI");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("no MPI support") != std::string::npos, e.what());
    }
#else
    QVERIFY(dist::mpi_built());
#endif
}

void TestDistUnits::bucketsFollowReverseParameterOrder() {
    // 4 float32 parameters of 1000 elements (4000 bytes each); 9000-byte buckets hold two.
    std::vector<Tensor> params;
    for (int i = 0; i < 4; ++i)
        params.push_back(ones({1000}).requires_grad_());
    dist::GradientBuckets buckets(params, 9000);
    QCOMPARE(buckets.bucket_count(), size_t(2));
    QCOMPARE(buckets.bytes(), int64_t(16000));
    // A tensor larger than a bucket gets one of its own; a dtype change starts a new one.
    params.push_back(ones({5000}).requires_grad_());
    params.push_back(ones({10}, DType::Float64).requires_grad_());
    QCOMPARE(dist::GradientBuckets(params, 9000).bucket_count(), size_t(4));
    QVERIFY_THROWS_EXCEPTION(Error, dist::GradientBuckets(params, 0));
}

void TestDistUnits::singleProcessCollectivesAreIdentity() {
    auto comm = dist::make_single_process_communicator();
    QCOMPARE(comm->rank(), 0);
    QCOMPARE(comm->size(), 1);
    double v[2] = {1.5, 2.5};
    comm->allreduce_sum(v, 2, DType::Float64);
    QCOMPARE(v[1], 2.5);
    QCOMPARE(comm->broadcast_string("x", 0), std::string("x"));
    Tensor p = ones({3}).requires_grad_();
    p.set_grad(full({3}, 2.0));
    dist::GradientBuckets buckets({p}, 1 << 20);
    buckets.average(*comm);
    QCOMPARE(p.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
    QCOMPARE(dist::first_divergent_tensor({p}, *comm), int64_t(-1));
}

QTEST_GUILESS_MAIN(TestDistUnits)
#include "test_dist_units.moc"

// Data pipeline: datasets, random_split, samplers, the DataLoader (determinism across worker
// counts, shutdown, errors), transforms, and the IDX / .npy readers on real and malformed files.
#include <myelin/data/dataloader.h>
#include <myelin/data/dataset.h>
#include <myelin/data/readers.h>
#include <myelin/data/sampler.h>
#include <myelin/data/transforms.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/tensor.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

using namespace myelin;
using namespace myelin::data;

namespace {
// 10 examples: input [2] = {i, -i}, target = i % 3 (classes a, b, c).
std::shared_ptr<TensorDataset> small_dataset(int64_t n = 10) {
    std::vector<float> in;
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < n; ++i) {
        in.push_back(float(i));
        in.push_back(float(-i));
        labels.push_back(i % 3);
    }
    return std::make_shared<TensorDataset>(from_vector(in, {n, 2}), from_vector(labels, {n}),
                                           std::vector<std::string>{"a", "b", "c"});
}

// Images [n, 1, 6, 6] with distinct values, labels = index (for order checks).
std::shared_ptr<TensorDataset> image_dataset(int64_t n) {
    Tensor x = arange(0, double(n * 36), 1.0, TensorOptions(DType::Float32)).view({n, 1, 6, 6});
    return std::make_shared<TensorDataset>(x, arange(n));
}

// Calls fn on chosen indices; sleeps to widen thread races.
class ProbeDataset : public Dataset {
  public:
    ProbeDataset(int64_t n, int64_t fail_at, int sleep_ms)
        : n_(n), fail_at_(fail_at), sleep_ms_(sleep_ms) {}
    int64_t size() const override { return n_; }
    Example get(int64_t index) const override {
        if (sleep_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
        if (index == fail_at_) throw Error("bad sample");
        ++calls;
        return {full({2}, double(index)), scalar_tensor(double(index), DType::Int64)};
    }
    mutable std::atomic<int> calls{0};

  private:
    int64_t n_, fail_at_;
    int sleep_ms_;
};

std::vector<Example> all_batches(DataLoader& loader) {
    std::vector<Example> out;
    for (auto& b : loader)
        out.push_back(b);
    return out;
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
}

void write_gz(const std::string& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), unsigned(bytes.size()));
    gzclose(f);
}

std::string be32(uint32_t v) {
    return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

std::string idx_images(uint32_t n, uint32_t h, uint32_t w) {
    std::string s = std::string("\0\0\x08\x03", 4) + be32(n) + be32(h) + be32(w);
    for (uint32_t i = 0; i < n * h * w; ++i)
        s += char(i % 251);
    return s;
}

std::string idx_labels(const std::vector<uint8_t>& labels) {
    std::string s = std::string("\0\0\x08\x01", 4) + be32(uint32_t(labels.size()));
    for (uint8_t l : labels)
        s += char(l);
    return s;
}

std::string npy(int major, const std::string& dict, const std::string& data) {
    std::string header = dict;
    const size_t pre = 6 + 2 + (major == 1 ? 2 : 4);
    while ((pre + header.size() + 1) % 64 != 0)
        header += ' ';
    header += '\n';
    std::string s = std::string("\x93NUMPY", 6) + char(major) + char(0);
    const auto len = uint32_t(header.size());
    s += char(len & 0xff);
    s += char((len >> 8) & 0xff);
    if (major > 1) s += std::string{char((len >> 16) & 0xff), char(len >> 24)};
    return s + header + data;
}

template <typename T> std::string raw(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

const char* kFashionDir = "/usr/share/datasets/fashion-mnist";
} // namespace

class TestData : public QObject {
    Q_OBJECT
  private slots:
    void tensor_dataset_subset_concat() {
        auto ds = small_dataset();
        QCOMPARE(ds->size(), int64_t(10));
        Example e = ds->get(4);
        QCOMPARE(e.input.to_vector<float>(), std::vector<float>({4, -4}));
        QCOMPARE(e.target.item<int64_t>(), int64_t(1));
        QCOMPARE(ds->classes(), std::vector<std::string>({"a", "b", "c"}));
        QCOMPARE(ds->class_counts(), std::vector<int64_t>({4, 3, 3}));
        QVERIFY(error_of<IndexError>([&] { ds->get(10); }).contains("index 10 is out of range"));
        QVERIFY(error_of<ShapeError>([] {
                    TensorDataset(zeros({3, 2}), zeros({4}));
                }).contains("3 examples"));
        QVERIFY(error_of<Error>([] {
                    TensorDataset(zeros({2, 2}), from_vector(std::vector<int64_t>{0, 5}, {2}),
                                  {"x", "y"});
                }).contains("class 5"));

        auto sub = std::make_shared<Subset>(ds, std::vector<int64_t>{9, 0, 3});
        QCOMPARE(sub->size(), int64_t(3));
        QCOMPARE(sub->get(0).input.to_vector<float>(), std::vector<float>({9, -9}));
        QCOMPARE(sub->class_counts(), std::vector<int64_t>({3, 0, 0}));
        QVERIFY(error_of<IndexError>([&] { Subset(ds, {10}); }).contains("index 10"));

        ConcatDataset cat({ds, sub});
        QCOMPARE(cat.size(), int64_t(13));
        QCOMPARE(cat.get(10).input.to_vector<float>(), std::vector<float>({9, -9}));
        QCOMPARE(cat.get(9).input.to_vector<float>(), std::vector<float>({9, -9}));
        QCOMPARE(cat.class_counts(), std::vector<int64_t>({7, 3, 3}));
        // parts with different classes: no common class list
        ConcatDataset mixed({ds, image_dataset(2)});
        QVERIFY(mixed.classes().empty());
        QVERIFY(mixed.class_counts().empty());
    }

    void random_split_sizes_and_disjointness() {
        auto ds = small_dataset(10);
        Generator g(7);
        auto parts = random_split(ds, std::vector<int64_t>{6, 4}, g);
        QCOMPARE(parts[0]->size(), int64_t(6));
        QCOMPARE(parts[1]->size(), int64_t(4));
        std::set<int64_t> seen;
        for (const auto& p : parts)
            for (int64_t i : p->indices())
                QVERIFY(seen.insert(i).second);
        QCOMPARE(seen.size(), size_t(10));
        // seeded: same generator seed, same split
        Generator g2(7);
        QCOMPARE(random_split(ds, std::vector<int64_t>{6, 4}, g2)[0]->indices(),
                 parts[0]->indices());
        // fractions: floor(10 * 0.33) = 3 each, the remainder 1 goes to the first part
        Generator g3(1);
        auto f = random_split(ds, std::vector<double>{0.33, 0.33, 0.34}, g3);
        QCOMPARE(f[0]->size(), int64_t(4));
        QCOMPARE(f[1]->size(), int64_t(3));
        QCOMPARE(f[2]->size(), int64_t(3));
        // remainder 2 of 0.25 * 10 parts, round-robin: 3, 3, 2, 2
        auto q = random_split(small_dataset(10), std::vector<double>{0.25, 0.25, 0.25, 0.25}, g3);
        QCOMPARE(q[0]->size(), int64_t(3));
        QCOMPARE(q[1]->size(), int64_t(3));
        QCOMPARE(q[2]->size(), int64_t(2));
        QVERIFY(error_of<Error>([&] {
                    random_split(ds, std::vector<int64_t>{5, 4}, g);
                }).contains("does not equal the length of the input dataset (10)"));
        QVERIFY(error_of<Error>([&] {
                    random_split(ds, std::vector<double>{0.5, 0.4}, g);
                }).contains("must sum to 1"));
    }

    void samplers() {
        Generator g(3);
        QCOMPARE(SequentialSampler(4).indices(g), std::vector<int64_t>({0, 1, 2, 3}));
        auto perm = RandomSampler(50).indices(g);
        auto sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        std::vector<int64_t> expect(50);
        std::iota(expect.begin(), expect.end(), 0);
        QCOMPARE(sorted, expect);
        QVERIFY(perm != expect);
        Generator a(11), b(11);
        QCOMPARE(RandomSampler(50).indices(a), RandomSampler(50).indices(b));
        auto with = RandomSampler(5, true, 100).indices(g);
        QCOMPARE(with.size(), size_t(100));
        QVERIFY(std::all_of(with.begin(), with.end(), [](int64_t i) { return i >= 0 && i < 5; }));

        // frequencies proportional to the weights; a zero weight is never drawn
        WeightedRandomSampler w({1.0, 3.0, 0.0, 6.0}, 20000, true);
        std::vector<int> count(4, 0);
        for (int64_t i : w.indices(g))
            ++count[size_t(i)];
        QCOMPARE(count[2], 0);
        QVERIFY(std::abs(count[0] / 20000.0 - 0.1) < 0.015);
        QVERIFY(std::abs(count[1] / 20000.0 - 0.3) < 0.015);
        QVERIFY(std::abs(count[3] / 20000.0 - 0.6) < 0.015);
        // without replacement: distinct indices, heavy ones first more often
        WeightedRandomSampler wo({1.0, 100.0, 0.0, 1.0}, 3, false);
        int heavy_first = 0;
        for (int t = 0; t < 200; ++t) {
            auto idx = wo.indices(g);
            QCOMPARE(std::set<int64_t>(idx.begin(), idx.end()).size(), size_t(3));
            QVERIFY(std::find(idx.begin(), idx.end(), 2) == idx.end());
            heavy_first += idx[0] == 1;
        }
        QVERIFY(heavy_first > 180);
        QVERIFY(error_of<Error>([] {
                    WeightedRandomSampler({1.0, 0.0}, 2, false);
                }).contains("without replacement from 1 non-zero"));
        QVERIFY(error_of<Error>([] {
                    WeightedRandomSampler({1.0, -1.0}, 2);
                }).contains("non-negative"));
        // class-balanced weights: classes of 4, 3, 3 examples
        auto cw = class_balanced_weights(*small_dataset());
        QCOMPARE(cw[0], 0.25);
        QCOMPARE(cw[1], 1.0 / 3);

        BatchSampler keep(std::make_shared<SequentialSampler>(10), 4, false);
        QCOMPARE(keep.size(), int64_t(3));
        auto kb = keep.batches(g);
        QCOMPARE(kb.size(), size_t(3));
        QCOMPARE(kb[2], std::vector<int64_t>({8, 9}));
        BatchSampler drop(std::make_shared<SequentialSampler>(10), 4, true);
        QCOMPARE(drop.size(), int64_t(2));
        QCOMPARE(drop.batches(g).size(), size_t(2));
    }

    void loader_batches_and_drop_last() {
        auto ds = small_dataset(10);
        DataLoaderOptions o;
        o.batch_size = 4;
        DataLoader loader(ds, o);
        QCOMPARE(loader.size(), int64_t(3));
        auto batches = all_batches(loader);
        QCOMPARE(batches.size(), size_t(3));
        QCOMPARE(batches[0].input.shape(), Dims({4, 2}));
        QCOMPARE(batches[0].target.to_vector<int64_t>(), std::vector<int64_t>({0, 1, 2, 0}));
        QCOMPARE(batches[2].input.shape(), Dims({2, 2}));
        o.drop_last = true;
        DataLoader dropping(ds, o);
        QCOMPARE(dropping.size(), int64_t(2));
        QCOMPARE(all_batches(dropping).size(), size_t(2));
        // next(): nullopt at the end of the epoch, then a new epoch starts
        int n = 0;
        while (dropping.next())
            ++n;
        QCOMPARE(n, 2);
        QVERIFY(dropping.next().has_value());
    }

    void loader_shuffle_is_a_permutation() {
        auto ds = image_dataset(37);
        DataLoaderOptions o;
        o.batch_size = 8;
        o.shuffle = true;
        o.seed = 5;
        o.num_workers = 2;
        DataLoader loader(ds, o);
        std::vector<int64_t> first, second;
        for (auto& b : loader)
            for (int64_t t : b.target.to_vector<int64_t>())
                first.push_back(t);
        for (auto& b : loader)
            for (int64_t t : b.target.to_vector<int64_t>())
                second.push_back(t);
        QVERIFY(first != second); // each epoch has its own order
        std::vector<int64_t> expect(37);
        std::iota(expect.begin(), expect.end(), 0);
        QVERIFY(first != expect);
        std::sort(first.begin(), first.end());
        std::sort(second.begin(), second.end());
        QCOMPARE(first, expect);
        QCOMPARE(second, expect);
    }

    void loader_deterministic_across_worker_counts() {
        auto ds = image_dataset(50);
        auto transform = std::make_shared<Compose>(std::vector<TransformPtr>{
            std::make_shared<RandomHorizontalFlip>(0.5), std::make_shared<RandomCrop>(6, 6, 2),
            std::make_shared<RandomAffineShift>(1, 1)});
        std::vector<std::vector<Example>> runs;
        for (int workers : {0, 1, 3}) {
            DataLoaderOptions o;
            o.batch_size = 7;
            o.shuffle = true;
            o.seed = 42;
            o.num_workers = workers;
            o.prefetch_factor = 1;
            o.transform = transform;
            DataLoader loader(ds, o);
            std::vector<Example> epochs = all_batches(loader);
            auto second = all_batches(loader);
            epochs.insert(epochs.end(), second.begin(), second.end());
            runs.push_back(epochs);
        }
        QCOMPARE(runs[0].size(), size_t(16));
        for (size_t r = 1; r < runs.size(); ++r)
            for (size_t b = 0; b < runs[0].size(); ++b) {
                QVERIFY(equal(runs[0][b].input, runs[r][b].input));
                QVERIFY(equal(runs[0][b].target, runs[r][b].target));
            }
        // a different seed gives different batches
        DataLoaderOptions o;
        o.batch_size = 7;
        o.shuffle = true;
        o.seed = 43;
        DataLoader other(ds, o);
        QVERIFY(!equal(all_batches(other)[0].target, runs[0][0].target));
    }

    // In-memory data with an element-wise transform is gathered and transformed a batch at a
    // time; the batches must be the values per-example loading and stacking gives, bit for bit.
    void loader_gathers_in_memory_batches() {
        const int64_t n = 300;
        std::vector<uint8_t> pixels(size_t(n * 784));
        for (size_t i = 0; i < pixels.size(); ++i)
            pixels[i] = uint8_t((i * 2654435761u) >> 13);
        auto images = std::make_shared<TensorDataset>(
            from_blob(pixels.data(), DType::UInt8, {n, 1, 28, 28}, TensorOptions(DType::UInt8)),
            arange(n));
        std::vector<int64_t> keep;
        for (int64_t i = n - 1; i >= 0; i -= 2)
            keep.push_back(i);
        auto subset = std::make_shared<Subset>(images, keep);
        const auto batch = subset->get_batch({3, 0, 7});
        QVERIFY(batch.has_value());
        QCOMPARE(batch->input.shape(), Dims({3, 1, 28, 28}));
        QCOMPARE(batch->target.to_vector<int64_t>(), std::vector<int64_t>({293, 299, 285}));
        QVERIFY_THROWS_EXCEPTION(IndexError, subset->get_batch({0, 150}));
        QVERIFY(!ProbeDataset(4, -1, 0).get_batch({0, 1}).has_value());

        DataLoaderOptions o;
        o.batch_size = 32;
        o.shuffle = true;
        o.seed = 9;
        o.transform =
            std::make_shared<Compose>(std::vector<TransformPtr>{std::make_shared<ScaleTo01>()});
        QVERIFY(o.transform->elementwise());
        DataLoader gathered(subset, o);
        o.collate = default_collate; // a collate function of its own: one example at a time
        DataLoader one_by_one(subset, o);
        const auto a = all_batches(gathered), b = all_batches(one_by_one);
        QCOMPARE(a.size(), size_t(5));
        QCOMPARE(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(a[i].input.dtype(), DType::Float32);
            QCOMPARE(a[i].input.shape(), b[i].input.shape());
            QVERIFY(equal(a[i].input, b[i].input));
            QVERIFY(equal(a[i].target, b[i].target));
        }
        QVERIFY(!RandomHorizontalFlip(0.5).elementwise());
    }

    void loader_destroyed_mid_epoch_joins() {
        auto ds = std::make_shared<ProbeDataset>(400, -1, 2);
        {
            DataLoaderOptions o;
            o.batch_size = 4;
            o.num_workers = 3;
            DataLoader loader(ds, o);
            QVERIFY(loader.next().has_value());
        }
        // The destructor stopped the workers instead of finishing the epoch (a hang would hit
        // ctest's timeout): 1 batch consumed + at most 3 workers * 2 batches in flight.
        QVERIFY(ds->calls.load() <= 4 * (1 + 3 * 2));
    }

    void loader_rethrows_worker_errors() {
        for (int workers : {0, 2}) {
            auto ds = std::make_shared<ProbeDataset>(20, 13, 0);
            DataLoaderOptions o;
            o.batch_size = 4;
            o.num_workers = workers;
            DataLoader loader(ds, o);
            const QString msg = error_of<Error>([&] {
                while (loader.next()) {
                }
            });
            QVERIFY2(msg.contains("loading example 13 (batch 3, epoch 0) failed: bad sample"),
                     qPrintable(msg));
            // the failed epoch is over; the next call starts epoch 1
            QVERIFY(loader.next().has_value());
            QCOMPARE(loader.epoch(), uint64_t(1));
        }
        DataLoaderOptions o;
        o.shuffle = true;
        o.sampler = std::make_shared<SequentialSampler>(3);
        QVERIFY(error_of<Error>([&] {
                    DataLoader(small_dataset(), o);
                }).contains("mutually exclusive"));
    }

    void loader_with_weighted_sampler() {
        auto ds = small_dataset(10); // classes of 4, 3, 3
        DataLoaderOptions o;
        o.batch_size = 100;
        o.sampler = std::make_shared<WeightedRandomSampler>(class_balanced_weights(*ds), 3000);
        DataLoader loader(ds, o);
        std::vector<int> count(3, 0);
        for (auto& b : loader)
            for (int64_t t : b.target.to_vector<int64_t>())
                ++count[size_t(t)];
        for (int c : count)
            QVERIFY(std::abs(c / 3000.0 - 1.0 / 3) < 0.04);
    }

    void transforms() {
        Generator g(0);
        Tensor img = arange(0, 6, 1.0, TensorOptions(DType::Float32)).view({1, 2, 3});
        QCOMPARE(RandomHorizontalFlip(1.0)(img, g).to_vector<float>(),
                 std::vector<float>({2, 1, 0, 5, 4, 3}));
        QVERIFY(equal(RandomHorizontalFlip(0.0)(img, g), img));
        // padding 1 then a 2x3 crop: a window of the zero-padded image
        Tensor crop = RandomCrop(2, 3, 1)(img, g);
        QCOMPARE(crop.shape(), Dims({1, 2, 3}));
        QVERIFY(error_of<ShapeError>([&] { RandomCrop(5, 5)(img, g); }).contains("larger"));
        // shifts keep the shape; every value is an input value or zero
        Tensor u8 = arange(1, 17, 1.0, TensorOptions(DType::UInt8)).view({1, 4, 4});
        for (int t = 0; t < 20; ++t) {
            Tensor s = RandomAffineShift(1, 1)(u8, g);
            QCOMPARE(s.shape(), Dims({1, 4, 4}));
            QCOMPARE(s.dtype(), DType::UInt8);
            const auto v = s.to_vector<int64_t>();
            QVERIFY(std::count(v.begin(), v.end(), 0) <= 7); // at most one row + one column
        }
        Tensor scaled = ScaleTo01()(u8, g);
        QCOMPARE(scaled.dtype(), DType::Float32);
        QCOMPARE(scaled.to_vector<float>()[15], 16.0f / 255.0f);
        // Every byte value, from a non-contiguous view: k / 255 divided in float, as PyTorch's
        // `x.float() / 255` (torch 1.13 gives 3 -> 0x1.818182p-7; times 1/255 would be ...84p-7).
        Tensor bytes = arange(0, 256, 1.0, TensorOptions(DType::UInt8)).view({16, 16}).t();
        QVERIFY(!bytes.is_contiguous());
        const Tensor fast = ScaleTo01()(bytes, g).contiguous();
        QCOMPARE(fast.shape(), Dims({16, 16}));
        const float* v = fast.data<float>();
        for (int k = 0; k < 256; ++k)
            QCOMPARE(v[(k % 16) * 16 + k / 16], float(k) / 255.0f);
        QCOMPARE(v[3 * 16], 0x1.818182p-7f);
        Tensor two = from_vector(std::vector<float>{1, 3, 10, 20}, {2, 1, 2});
        QCOMPARE(Normalize({2, 15}, {1, 5})(two, g).to_vector<float>(),
                 std::vector<float>({-1, 1, -1, 1}));
        QVERIFY(error_of<ShapeError>([&] {
                    Normalize({0, 0, 0}, {1, 1, 1})(two, g);
                }).contains("3 channel statistics"));
        // mean/std from a dataset: channel 0 = {1, 3}, channel 1 = {10, 20}
        auto ds = std::make_shared<TensorDataset>(two.unsqueeze(0), Tensor());
        auto [mean, std] = compute_mean_std(*ds);
        QCOMPARE(mean, std::vector<double>({2, 15}));
        QCOMPARE(std, std::vector<double>({1, 5}));
    }

    void idx_reader_written_files() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        write_bytes(d + "/img", idx_images(3, 2, 2));
        write_gz(d + "/img.gz", idx_images(3, 2, 2));
        write_bytes(d + "/lab", idx_labels({2, 0, 1}));
        Tensor plain = read_idx(d + "/img");
        QCOMPARE(plain.shape(), Dims({3, 2, 2}));
        QCOMPARE(plain.dtype(), DType::UInt8);
        QVERIFY(equal(read_idx(d + "/img.gz"), plain));
        auto ds = load_idx_dataset(d + "/img.gz", d + "/lab", {"x", "y", "z"}, true);
        QCOMPARE(ds->inputs().shape(), Dims({3, 1, 2, 2}));
        QCOMPARE(ds->inputs().dtype(), DType::Float32);
        QCOMPARE(ds->get(1).input.to_vector<float>()[0], 4.0f / 255.0f);
        QCOMPARE(ds->class_counts(), std::vector<int64_t>({1, 1, 1}));

        const std::string good = idx_images(3, 2, 2);
        write_bytes(d + "/magic", "\x01\x02" + good.substr(2));
        QVERIFY(
            error_of<Error>([&] { read_idx(d + "/magic"); }).contains("/magic': not an IDX file"));
        write_bytes(d + "/type", std::string("\0\0\x0d", 3) + good.substr(3));
        QVERIFY(error_of<Error>([&] { read_idx(d + "/type"); }).contains("element type 0x0d"));
        write_bytes(d + "/short", good.substr(0, good.size() - 3));
        QVERIFY(error_of<Error>([&] {
                    read_idx(d + "/short");
                }).contains("/short': file is truncated: it ends inside the data"));
        write_bytes(d + "/head", good.substr(0, 6));
        QVERIFY(error_of<Error>([&] { read_idx(d + "/head"); }).contains("inside the header"));
        write_bytes(d + "/long", good + "xx");
        QVERIFY(error_of<Error>([&] { read_idx(d + "/long"); }).contains("trailing bytes"));
        // a gzip stream cut short
        std::ifstream in(d + "/img.gz", std::ios::binary);
        std::string gz((std::istreambuf_iterator<char>(in)), {});
        write_bytes(d + "/cut.gz", gz.substr(0, gz.size() - 12));
        const QString cut = error_of<Error>([&] { read_idx(d + "/cut.gz"); });
        QVERIFY2(cut.contains("/cut.gz'"), qPrintable(cut));
        QVERIFY(error_of<Error>([&] { read_idx(d + "/missing"); }).contains("cannot open"));
        // dataset-level checks
        write_bytes(d + "/lab2", idx_labels({0, 1}));
        QVERIFY(error_of<Error>([&] {
                    load_idx_dataset(d + "/img", d + "/lab2", {});
                }).contains("2 labels for 3 images"));
        QVERIFY(error_of<Error>([&] {
                    load_idx_dataset(d + "/img", d + "/lab", {"x", "y"});
                }).contains("label 2 at index 0 is not one of the 2 classes"));
    }

    void idx_reader_fashion_mnist() {
        if (!std::filesystem::exists(kFashionDir))
            QSKIP("Fashion-MNIST not installed (/usr/share/datasets/fashion-mnist, Debian "
                  "package dataset-fashion-mnist)");
        auto test = load_fashion_mnist(kFashionDir, false);
        QCOMPARE(test->inputs().shape(), Dims({10000, 1, 28, 28}));
        QCOMPARE(test->inputs().dtype(), DType::UInt8);
        QCOMPARE(test->targets().dtype(), DType::Int64);
        QCOMPARE(test->classes().size(), size_t(10));
        QCOMPARE(test->classes()[0], std::string("T-shirt/top"));
        QCOMPARE(test->classes()[9], std::string("Ankle boot"));
        QCOMPARE(test->class_counts(), std::vector<int64_t>(10, 1000));
        auto train = load_fashion_mnist(kFashionDir, true, true);
        QCOMPARE(train->size(), int64_t(60000));
        QCOMPARE(train->class_counts(), std::vector<int64_t>(10, 6000));
        const double mx = max(train->inputs()).item();
        QVERIFY(mx <= 1.0 && mx > 0.9);
        // the whole test set through a 2-worker loader
        DataLoaderOptions o;
        o.batch_size = 256;
        o.shuffle = true;
        o.num_workers = 2;
        o.transform = std::make_shared<ScaleTo01>();
        DataLoader loader(test, o);
        int64_t seen = 0;
        for (auto& b : loader) {
            QCOMPARE(b.input.dtype(), DType::Float32);
            seen += b.input.size(0);
        }
        QCOMPARE(seen, int64_t(10000));
    }

    void npy_reader() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        write_bytes(d + "/f4.npy",
                    npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                        raw(std::vector<float>{1, 2, 3, 4, 5, 6})));
        Tensor f = read_npy(d + "/f4.npy");
        QCOMPARE(f.shape(), Dims({2, 3}));
        QCOMPARE(f.to_vector<float>(), std::vector<float>({1, 2, 3, 4, 5, 6}));
        write_bytes(d + "/f8.npy",
                    npy(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                        raw(std::vector<double>{0.5, -1})));
        QCOMPARE(read_npy(d + "/f8.npy").to_vector<double>(), std::vector<double>({0.5, -1}));
        write_bytes(d + "/i8.npy",
                    npy(3, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                        raw(std::vector<int64_t>{7, -8, 9})));
        QCOMPARE(read_npy(d + "/i8.npy").dtype(), DType::Int64);
        QCOMPARE(read_npy(d + "/i8.npy").to_vector<int64_t>(), std::vector<int64_t>({7, -8, 9}));
        write_bytes(d + "/u1.npy", npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }",
                                       std::string("\xff", 1)));
        Tensor u = read_npy(d + "/u1.npy");
        QCOMPARE(u.dim(), 0);
        QCOMPARE(u.item(), 255.0);

        auto err = [&](const std::string& name, const std::string& bytes) {
            write_bytes(d + "/" + name, bytes);
            return error_of<Error>([&] { read_npy(d + "/" + name); });
        };
        QVERIFY(err("fo.npy", npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                                  raw(std::vector<float>{1})))
                    .contains("Fortran order"));
        QVERIFY(
            err("magic.npy", std::string("NUMPY\x01\x00xxxxxxxxxx", 17)).contains("wrong magic"));
        std::string v4 = npy(1, "{}", "");
        v4[6] = '\x04';
        QVERIFY(err("ver.npy", v4).contains("version 4"));
        QVERIFY(err("dt.npy", npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                                  raw(std::vector<float>{1})))
                    .contains("unsupported .npy dtype '>f4'"));
        QVERIFY(err("short.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                                     raw(std::vector<float>{1, 2})))
                    .contains("/short.npy': file is truncated: the data needs 16 bytes"));
        QVERIFY(err("noshape.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, }", ""))
                    .contains("no 'shape' field"));
        QVERIFY(err("badshape.npy",
                    npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }", ""))
                    .contains("'shape' field is malformed"));
        QVERIFY(
            err("hdr.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "")
                               .substr(0, 20))
                .contains("inside the header"));
    }
};

QTEST_GUILESS_MAIN(TestData)
#include "test_data.moc"

// DataLoader throughput on Fashion-MNIST (the Debian package): samples/s over one shuffled epoch
// of the training set with the studio's default transform (ScaleTo01), batch 128, for 0, 1 and 2
// workers. Prints one JSON line per worker count.
#include <myelin/data/dataloader.h>
#include <myelin/data/readers.h>
#include <myelin/data/transforms.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace myelin;

int main(int argc, char** argv) {
    std::string dir = "/usr/share/datasets/fashion-mnist";
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    auto train = data::load_fashion_mnist(dir, true);
    for (int workers : {0, 1, 2}) {
        data::DataLoaderOptions o;
        o.batch_size = 128;
        o.shuffle = true;
        o.num_workers = workers;
        o.seed = 1;
        o.transform = std::make_shared<data::ScaleTo01>();
        data::DataLoader loader(train, o);
        int64_t samples = 0;
        auto t0 = std::chrono::steady_clock::now();
        loader.start_epoch(0);
        while (auto batch = loader.next())
            samples += batch->input.size(0);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("{\"workload\": \"dataloader_fashion_%d_workers\", \"myelin\": %.0f, "
                    "\"unit\": \"samples/s\", \"samples\": %lld}\n",
                    workers, double(samples) / s, static_cast<long long>(samples));
    }
    return 0;
}

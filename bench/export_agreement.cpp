// Runs an exported Fashion-MNIST classifier (ONNX) with OpenCV's DNN module over the 10,000 test
// images and counts how often its class (argmax) is the one `myelin eval --predictions` wrote.
// Prints the count; bench/export_check.sh runs it with the PyTorch and onnxruntime counterparts.
#include <cstdio>
#include <fstream>
#include <opencv2/dnn.hpp>
#include <sstream>
#include <string>
#include <vector>
#include <zlib.h>
int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: agree MODEL.onnx t10k-images.gz eval.csv\n");
        return 2;
    }
    gzFile g = gzopen(argv[2], "rb");
    unsigned char header[16];
    gzread(g, header, 16);
    const int n = (header[4] << 24) | (header[5] << 16) | (header[6] << 8) | header[7];
    std::vector<unsigned char> pixels(size_t(n) * 784);
    gzread(g, pixels.data(), unsigned(pixels.size()));
    gzclose(g);
    std::ifstream csv(argv[3]);
    std::string line;
    std::getline(csv, line);
    std::vector<int> expected;
    while (std::getline(csv, line)) {
        std::stringstream s(line);
        std::string cell;
        std::getline(s, cell, ',');
        int best = 0, c = 0;
        double best_value = -1e300;
        while (std::getline(s, cell, ',')) {
            double v = std::stod(cell);
            if (v > best_value) best_value = v, best = c;
            ++c;
        }
        expected.push_back(best);
    }
    cv::dnn::Net net = cv::dnn::readNetFromONNX(argv[1]);
    int agree = 0;
    const int batch = 500;
    for (int start = 0; start < n; start += batch) {
        const int b = std::min(batch, n - start);
        int dims[4] = {b, 1, 28, 28};
        cv::Mat blob(4, dims, CV_32F);
        for (int i = 0; i < b * 784; ++i)
            blob.ptr<float>()[i] = pixels[size_t(start) * 784 + i] / 255.0f;
        net.setInput(blob);
        cv::Mat out = net.forward();
        for (int i = 0; i < b; ++i) {
            const float* row = out.ptr<float>(i);
            int best = 0;
            for (int c = 1; c < out.size[1]; ++c)
                if (row[c] > row[best]) best = c;
            agree += best == expected[size_t(start + i)];
        }
    }
    std::printf("OpenCV %s: %d of %d test images give the class myelin eval predicts (%zu "
                "predictions in the CSV)\n",
                CV_VERSION, agree, n, expected.size());
    return 0;
}

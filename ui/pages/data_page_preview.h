#pragma once
// What the Data page's preview computes on a worker thread (data_page_preview.cpp) and its panel
// shows (data_page_preview_panel.cpp). Internal to the page.
#include <QImage>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <string>
#include <vector>

namespace myelin::train {
struct DataSplits;
}

namespace myelin::ui {

// A text example as the preview lists it: its class, the text, its tokens and their ids.
struct TextPreviewRow {
    QString className, text, tokens, ids;
};

// What one run of make_data gives the page; filled on the worker thread (QImage is safe there).
struct DataPreview {
    uint64_t generation = 0;
    bool ok = false;
    QString error;
    int64_t train = 0;
    int64_t validation = -1; // -1: no such split
    int64_t test = -1;
    QString inputShape;
    QString inputDtype;
    double valueMin = 0, valueMax = 0; // over the examples shown
    std::vector<std::string> classNames;
    std::vector<int64_t> classCounts;
    // Images ([1, H, W], [3, H, W] or [H, W] inputs) with their captions.
    std::vector<QImage> images;
    QStringList captions;
    // Tabular (1-D) inputs: a header and the first rows, the target last.
    QStringList columns;
    std::vector<QStringList> rows;
    // Neither: why there is no picture.
    QString examplesNote;
    // Regression: the target over the training split.
    QString targetName;
    double targetMin = 0, targetMean = 0, targetMax = 0;
    std::vector<double> histogramCenters, histogramCounts;
    double histogramWidth = 0;
    // Text sources: tokenised examples (the first few of each class), the vocabulary, the share
    // of validation tokens that are <unk>, and tokens per training example before truncation.
    bool isText = false;
    std::vector<TextPreviewRow> textRows;
    QString tokenLevel;
    int64_t vocabularySize = 0, maxLength = 0;
    double unknownRate = -1; // -1: no validation split
    int64_t lengthsCounted = 0, truncated = 0;
    std::vector<double> lengthCenters, lengthCounts;
    double lengthWidth = 1;
    QStringList notes; // what the source skipped or dropped
};

// Fills the text part of `out` from a text source's splits (on the worker thread).
void computeTextPreview(const train::DataSplits& splits, DataPreview& out);

} // namespace myelin::ui

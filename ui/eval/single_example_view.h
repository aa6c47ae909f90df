#pragma once
// Try one example (issue 14, item 6): a checkpoint's model on one input — a test example
// picked by index (spin box, previous / next), an image file (image projects: converted to the
// project's channels and size, then its test-time transforms) or a row of values typed or
// pasted as CSV (tabular projects). Shows the input, the prediction (the top classes'
// probabilities as bars, or the predicted values) and the input's activations layer by layer,
// taken with forward hooks: a grid of feature maps for 4-D outputs, a histogram of the values
// for the others. Bad input (a file that is not an image, a row with the wrong number of
// values, a checkpoint that does not fit) is said in words and changes nothing shown.
#include <myelin/data/dataset.h>
#include <myelin/tensor.h>

#include <QString>
#include <QWidget>

#include <memory>
#include <string>
#include <utility>
#include <vector>

class QCustomPlot;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;
class QStackedWidget;

namespace myelin::io {
struct Project;
}
namespace myelin::train {
class Trainer;
}

namespace myelin::ui {

class ChannelGrid;

class SingleExampleView : public QWidget {
    Q_OBJECT

  public:
    explicit SingleExampleView(QWidget* parent = nullptr);
    ~SingleExampleView() override;

    // Loads the checkpoint into the project's model (data paths relative to `projectDir`) and
    // shows the first test example; a checkpoint that cannot be used leaves a message.
    void setModel(const io::Project& project, const QString& projectDir,
                  const QString& checkpointPath);
    // Test example `index` (of the test part, else the validation part).
    void showExample(int64_t index);
    // Image projects: the picture in `path`, converted to the model's input. False (and a
    // message) when it cannot be read or the project's input is not an image.
    bool openImage(const QString& path);
    // Tabular projects: one row of comma-separated values, as many as the model's inputs.
    bool showRow(const QString& csvRow);

    struct Activation {
        std::string layer;
        std::string kind; // the module's class name ("Conv2d")
        Tensor values;    // the layer's output for the one example, batch dimension removed
    };

    bool hasModel() const { return trainer_ != nullptr; }
    QString message() const;   // the last problem said (empty when none)
    QString inputNote() const; // what was done to an opened image (converted, resized)
    int64_t exampleCount() const;
    int64_t currentExample() const { return index_; } // -1 for an opened image or a typed row
    // Classification: the predicted class and the top classes with their probabilities.
    int64_t predictedClass() const { return predicted_; }
    const std::vector<std::pair<int64_t, double>>& topClasses() const { return top_; }
    const Tensor& output() const { return output_; } // the model's output for the input
    const std::vector<Activation>& activations() const { return activations_; }
    void selectLayer(const std::string& layer);
    std::string selectedLayer() const;
    bool showsFeatureMaps() const; // the selected layer as a grid of channels
    QWidget* featureMapGrid() const;
    QCustomPlot* probabilityPlot() const { return probabilities_; }

  private:
    // Runs the model on one raw input (before the eval transforms), with hooks on every layer.
    void run(const Tensor& raw, const QString& caption, const Tensor& target);
    void showInput(const Tensor& raw, const QString& caption, const Tensor& target);
    void showPrediction(const Tensor& target);
    void showLayer(int row);
    void say(const QString& problem);
    void updateControls();

    std::unique_ptr<train::Trainer> trainer_;
    data::DatasetPtr dataset_;
    std::vector<std::string> classNames_;
    bool imageInput_ = false;
    int64_t index_ = -1;
    int64_t predicted_ = -1;
    std::vector<std::pair<int64_t, double>> top_;
    Tensor output_;
    std::vector<Activation> activations_;
    QString problem_;
    QString inputNote_;

    QLabel* title_ = nullptr;
    QSpinBox* indexBox_ = nullptr;
    QPushButton* previous_ = nullptr;
    QPushButton* next_ = nullptr;
    QPushButton* openImage_ = nullptr;
    QLineEdit* row_ = nullptr;
    QPushButton* runRow_ = nullptr;
    QLabel* problemLabel_ = nullptr;
    QLabel* inputPicture_ = nullptr;
    QLabel* inputText_ = nullptr;
    QLabel* predictionText_ = nullptr;
    QCustomPlot* probabilities_ = nullptr;
    QListWidget* layerList_ = nullptr;
    QLabel* layerTitle_ = nullptr;
    QStackedWidget* layerStack_ = nullptr;
    ChannelGrid* grid_ = nullptr;
    QCustomPlot* histogram_ = nullptr;
};

} // namespace myelin::ui

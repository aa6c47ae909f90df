#pragma once
// "Find learning rate": the learning-rate range test (train/lr_finder.h) on a snapshot of the
// project, on a worker thread, its smoothed loss plotted against the learning rate (log x) as
// it comes in, with the two suggestions marked (the steepest descent, and a tenth of the lowest
// point). "Use" emits the chosen value; the Training page applies it as one undoable edit. The
// project is not touched otherwise.
#include <myelin/io/project.h>
#include <myelin/train/lr_finder.h>

#include <QDialog>

#include <atomic>
#include <memory>
#include <mutex>

class QCPGraph;
class QCPItemStraightLine;
class QCustomPlot;
class QLabel;
class QPushButton;
class QTimer;

namespace myelin::ui {

class LrFinderDialog : public QDialog {
    Q_OBJECT

  public:
    LrFinderDialog(const io::Project& project, const QString& projectDir, double currentLr,
                   QWidget* parent = nullptr);
    ~LrFinderDialog() override; // cancels a test still running and waits for it

    // Records the test in this run store (as a run tagged lr-find, with the project's path);
    // empty: not recorded. Before start().
    void setRecording(const QString& storePath, const QString& projectPath);
    // Starts the test (the dialog does when first shown).
    void start();
    bool running() const;
    // The finished test's result (empty curves while it runs); its error when it failed.
    const train::LrFindResult& result() const { return result_; }
    QString error() const { return error_; }
    QCustomPlot* plot() const { return plot_; }
    QPushButton* useSteepestButton() const { return useSteepest_; }
    QPushButton* useMinimumButton() const { return useMinimum_; }
    QString summaryText() const;

  signals:
    void finished();
    void learningRateChosen(double lr);

  protected:
    void showEvent(QShowEvent* event) override;
    void reject() override; // Cancel / Escape: stops the test first

  private:
    struct Job;
    void poll();
    void onFinished();

    io::Project project_;
    QString projectDir_;
    QString storePath_, projectPath_;
    double currentLr_;
    std::shared_ptr<Job> job_;
    bool started_ = false;
    train::LrFindResult result_;
    QString error_;
    QCustomPlot* plot_ = nullptr;
    QCPGraph* smoothed_ = nullptr;
    QCPGraph* raw_ = nullptr;
    QLabel* status_ = nullptr;
    QPushButton* useSteepest_ = nullptr;
    QPushButton* useMinimum_ = nullptr;
    QPushButton* close_ = nullptr;
    QTimer* timer_ = nullptr;
};

} // namespace myelin::ui

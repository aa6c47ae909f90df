#pragma once
// The studio's start page: what Myelin Studio is, the compute backends this process found,
// and what the studio is going to do.
#include <QWidget>

class QLabel;

namespace myelin::ui {

class WelcomePage : public QWidget {
    Q_OBJECT

  public:
    explicit WelcomePage(QWidget* parent = nullptr);

    // Shows a note (rich text) about the project file the studio was started with; an empty
    // text hides it.
    void setProjectNotice(const QString& text);

  private:
    QLabel* projectNotice_ = nullptr;
};

} // namespace myelin::ui

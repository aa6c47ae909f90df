#include "shell/welcome_page.h"

#include "widgets/theme.h"

#include <myelin/device.h>
#include <myelin/version.h>

#include <QFileInfo>
#include <QFont>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

constexpr int kContentWidth = 760;

QLabel* makeLabel(const QString& text, const char* objectName, QWidget* parent) {
    auto* label = new QLabel(text, parent);
    label->setObjectName(QString::fromLatin1(objectName));
    return label;
}

QLabel* makeSectionHeading(const QString& text, QWidget* parent) {
    auto* label = new QLabel(text.toUpper(), parent);
    label->setProperty("class", QStringLiteral("welcomeHeading"));
    QFont font = label->font();
    font.setLetterSpacing(QFont::AbsoluteSpacing, 1.0);
    label->setFont(font);
    return label;
}

QFrame* makeBackendCard(const BackendInfo& backend, QWidget* parent) {
    auto* card = new QFrame(parent);
    card->setObjectName(QStringLiteral("backendCard"));
    card->setProperty("backend", QString::fromStdString(backend.name));
    card->setMinimumWidth(230);

    auto* dot = new QLabel(card);
    dot->setProperty("class", QStringLiteral("backendDot"));
    dot->setFixedSize(10, 10);
    dot->setToolTip(QObject::tr("Available"));

    auto* name = new QLabel(QString::fromStdString(backend.name), card);
    name->setProperty("class", QStringLiteral("backendName"));

    auto* details = new QLabel(QString::fromStdString(backend.details), card);
    details->setProperty("class", QStringLiteral("backendDetails"));
    details->setWordWrap(true);

    auto* nameRow = new QHBoxLayout;
    nameRow->setSpacing(8);
    nameRow->addWidget(dot, 0, Qt::AlignVCenter);
    nameRow->addWidget(name, 1);

    auto* layout = new QVBoxLayout(card);
    layout->setContentsMargins(16, 14, 16, 14);
    layout->setSpacing(6);
    layout->addLayout(nameRow);
    layout->addWidget(details);
    return card;
}

} // namespace

WelcomePage::WelcomePage(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("welcomePage"));
    setAttribute(Qt::WA_StyledBackground, true);

    auto* content = new QWidget(this);
    content->setObjectName(QStringLiteral("welcomeContent"));
    content->setMaximumWidth(kContentWidth);

    // Header: icon, title, subtitle.
    auto* logo = makeLabel(QString(), "welcomeLogo", content);
    logo->setPixmap(studioIcon().pixmap(QSize(88, 88)));
    logo->setFixedSize(88, 88);

    auto* title = makeLabel(tr("Myelin Studio"), "welcomeTitle", content);
    auto* subtitle = makeLabel(tr("Build neural networks, train them, and see what they learn."),
                               "welcomeSubtitle", content);
    subtitle->setWordWrap(true);

    auto* titles = new QVBoxLayout;
    titles->setSpacing(4);
    titles->addStretch(1);
    titles->addWidget(title);
    titles->addWidget(subtitle);
    titles->addStretch(1);

    auto* header = new QHBoxLayout;
    header->setSpacing(20);
    header->addWidget(logo, 0, Qt::AlignVCenter);
    header->addLayout(titles, 1);

    // Compute backends found in this process.
    auto* backendRow = new QHBoxLayout;
    backendRow->setSpacing(12);
    for (const BackendInfo& backend : available_backends())
        backendRow->addWidget(makeBackendCard(backend, content));
    backendRow->addStretch(1);

    // Start: a new project (empty or from an example) or an existing one.
    auto* newButton = new QPushButton(tr("New Project…"), content);
    newButton->setObjectName(QStringLiteral("welcomeNew"));
    newButton->setProperty("class", QStringLiteral("startButton"));
    newButton->setToolTip(tr("An empty model, or a copy of an example project"));
    connect(newButton, &QPushButton::clicked, this, &WelcomePage::newProjectRequested);
    auto* openButton = new QPushButton(tr("Open…"), content);
    openButton->setObjectName(QStringLiteral("welcomeOpen"));
    openButton->setProperty("class", QStringLiteral("startButton"));
    connect(openButton, &QPushButton::clicked, this, &WelcomePage::openRequested);
    auto* startRow = new QHBoxLayout;
    startRow->setSpacing(10);
    startRow->addWidget(newButton);
    startRow->addWidget(openButton);
    startRow->addStretch(1);

    recentSection_ = new QWidget(content);
    recentSection_->setObjectName(QStringLiteral("welcomeRecent"));
    auto* recentLayout = new QVBoxLayout(recentSection_);
    recentLayout->setContentsMargins(0, 24, 0, 0);
    recentLayout->setSpacing(10);
    recentLayout->addWidget(makeSectionHeading(tr("Recent projects"), recentSection_));
    recentList_ = new QVBoxLayout;
    recentList_->setSpacing(4);
    recentLayout->addLayout(recentList_);
    recentSection_->hide();

    // What the studio does, and where it stands today.
    auto* roadmapCard = new QFrame(content);
    roadmapCard->setObjectName(QStringLiteral("roadmapCard"));
    auto* roadmap = makeLabel(
        tr("Assemble layers in a visual graph editor — convolutions for images, LSTM, GRU and "
           "Transformer layers for text — pick the data, a loss, an optimizer and "
           "a learning-rate schedule, press Train, and watch the loss, accuracy and learning "
           "rate live; every layer's gradient norm, update ratio and weight norm on the "
           "Gradient Flow tab, its activation and gradient histograms on Distributions, the "
           "feature maps of its convolutions on Feature Maps, how a recurrent layer's gradient "
           "fades through time on Gradient through Time, and its health as a badge on the "
           "canvas, at any recorded step. Breakpoints pause a run at a NaN, a gradient spike or "
           "dead units. Every run, from the studio or the headless myelin tool, is recorded in "
           "the run store: the Runs tab lists them as a family tree, compares them, and resumes "
           "or forks one from any checkpoint; the Evaluate tab shows a checkpoint's confusion "
           "matrix, its worst examples and one example layer by layer; File > Export writes "
           "ONNX, PyTorch code or safetensors. Plugins add layers, losses, optimizers, "
           "schedules, data sources, transforms and metrics (Help > Plugins)."),
        "welcomeRoadmap", roadmapCard);
    roadmap->setWordWrap(true);
    auto* statusLine =
        makeLabel(tr("Training on a CUDA GPU (every layer; float32 or float16 mixed precision) "
                     "is built but has not been run on a GPU yet. Training across machines "
                     "(data-parallel over MPI) runs from the command line (mpirun myelin train, "
                     "see the README), and in several processes on this machine from the "
                     "Training page where Open MPI is installed. Recurrent and attention layers "
                     "do not export to ONNX or PyTorch code yet."),
                  "welcomeStatus", roadmapCard);
    statusLine->setWordWrap(true);
    auto* roadmapLayout = new QVBoxLayout(roadmapCard);
    roadmapLayout->setContentsMargins(18, 16, 18, 16);
    roadmapLayout->setSpacing(10);
    roadmapLayout->addWidget(roadmap);
    roadmapLayout->addWidget(statusLine);

    projectNotice_ = makeLabel(QString(), "projectNotice", content);
    projectNotice_->setWordWrap(true);
    projectNotice_->setTextFormat(Qt::RichText);
    projectNotice_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    projectNotice_->hide();

    auto* footer =
        makeLabel(tr("Version %1  ·  Qt %2")
                      .arg(QString::fromLatin1(myelin::version()), QString::fromLatin1(qVersion())),
                  "welcomeFooter", content);

    auto* column = new QVBoxLayout(content);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(0);
    column->addLayout(header);
    column->addSpacing(32);
    column->addLayout(startRow);
    // A project that could not be opened is said next to the buttons that open one, above the
    // fold of a short window (its top margin is the theme's).
    column->addWidget(projectNotice_);
    column->addWidget(recentSection_);
    column->addSpacing(32);
    column->addWidget(makeSectionHeading(tr("Compute backends"), content));
    column->addSpacing(10);
    column->addLayout(backendRow);
    column->addSpacing(28);
    column->addWidget(makeSectionHeading(tr("What the studio does"), content));
    column->addSpacing(10);
    column->addWidget(roadmapCard);
    column->addSpacing(24);
    column->addWidget(footer);

    // Centre the column horizontally; keep it in the upper part of tall windows.
    auto* centering = new QHBoxLayout;
    centering->addStretch(1);
    centering->addWidget(content, 100);
    centering->addStretch(1);

    // In a scroll area: a window too short for the wrapped texts scrolls instead of clipping them.
    auto* page = new QWidget;
    page->setObjectName(QStringLiteral("welcomeScrollPage"));
    auto* outer = new QVBoxLayout(page);
    outer->setContentsMargins(48, 56, 48, 32);
    outer->addStretch(1);
    outer->addLayout(centering);
    outer->addStretch(2);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("welcomeScroll"));
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidgetResizable(true);
    scroll->setWidget(page);
    // The page's own background shows through (the theme paints #welcomePage).
    scroll->viewport()->setAutoFillBackground(false);
    page->setAutoFillBackground(false);
    auto* pageLayout = new QVBoxLayout(this);
    pageLayout->setContentsMargins(0, 0, 0, 0);
    pageLayout->addWidget(scroll);
}

void WelcomePage::setProjectNotice(const QString& text) {
    projectNotice_->setText(text);
    projectNotice_->setVisible(!text.isEmpty());
    relayoutWhileHidden();
}

// While a project is open the page is hidden, and a hidden widget's layouts do not activate on
// their own: the page's minimum size (which the window's minimum counts) would keep leaving out
// a recent list or notice shown meanwhile, or not, depending on what else happened to re-lay the
// page out (style sheet side effects among them).
void WelcomePage::relayoutWhileHidden() {
    if (isVisible()) return;
    projectNotice_->parentWidget()->layout()->activate();
    if (auto* scroll = findChild<QScrollArea*>(QStringLiteral("welcomeScroll")))
        scroll->widget()->layout()->activate();
    layout()->activate();
    if (QWidget* stack = parentWidget()) stack->updateGeometry();
}

} // namespace myelin::ui

namespace myelin::ui {

void WelcomePage::setRecentFiles(const QStringList& paths) {
    while (QLayoutItem* item = recentList_->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    constexpr int kShown = 5;
    for (const QString& path : paths.mid(0, kShown)) {
        auto* row = new QWidget(recentSection_);
        auto* layout = new QHBoxLayout(row);
        layout->setContentsMargins(0, 0, 0, 0);
        layout->setSpacing(10);
        auto* link = new QLabel(QStringLiteral("<a href=\"open\">%1</a>")
                                    .arg(QFileInfo(path).fileName().toHtmlEscaped()),
                                row);
        link->setProperty("class", QStringLiteral("recentFile"));
        link->setObjectName(QStringLiteral("recentFileLink"));
        link->setToolTip(path);
        connect(link, &QLabel::linkActivated, this,
                [this, path] { emit recentFileRequested(path); });
        auto* folder = new QLabel(QFileInfo(path).absolutePath(), row);
        folder->setProperty("class", QStringLiteral("recentPath"));
        layout->addWidget(link);
        layout->addWidget(folder, 1);
        recentList_->addWidget(row);
    }
    recentSection_->setVisible(!paths.isEmpty());
    relayoutWhileHidden();
}

} // namespace myelin::ui

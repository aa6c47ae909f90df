#include "editor/node_item.h"

#include "document/model_edits.h"
#include "editor/graph_scene.h"
#include "widgets/theme.h"

#include <QFontDatabase>
#include <QFontMetricsF>
#include <QGraphicsSceneHoverEvent>
#include <QObject>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include <algorithm>
#include <cmath>

namespace myelin::ui {

namespace {

constexpr double kHeaderHeight = 24;
constexpr double kLineHeight = 13;
constexpr double kFooterHeight = 18;
constexpr double kPadding = 10;
constexpr double kPortRadius = 5;
constexpr double kPortReach = 11;
constexpr int kMaxAttrLines = 2;
constexpr int kMaxProblemLines = 2;
// Below this zoom (about 4 px text) cards are drawn without text and ports.
constexpr double kTextLevelOfDetail = 0.4;

QFont titleFont() {
    QFont font;
    font.setPointSizeF(9.5);
    font.setBold(true);
    return font;
}
QFont bodyFont() {
    QFont font;
    font.setPointSizeF(8);
    return font;
}
QFont monoFont() {
    QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    font.setPointSizeF(8);
    return font;
}

// Greedy word wrap into at most `maxLines` lines; the last one is elided when text remains.
QStringList wrapLines(const QString& text, const QFontMetricsF& metrics, double width,
                      int maxLines) {
    QStringList lines;
    QString current;
    const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (qsizetype i = 0; i < words.size(); ++i) {
        const QString candidate =
            current.isEmpty() ? words[i] : current + QLatin1Char(' ') + words[i];
        if (metrics.horizontalAdvance(candidate) <= width || current.isEmpty()) {
            current = candidate;
            continue;
        }
        lines << current;
        current = words[i];
        if (lines.size() == maxLines) {
            // Out of lines: the rest goes, elided, into the last one.
            QStringList rest = words.mid(i);
            lines.last() = metrics.elidedText(lines.last() + QLatin1Char(' ') + rest.join(' '),
                                              Qt::ElideRight, width);
            return lines;
        }
    }
    if (!current.isEmpty()) lines << current;
    for (QString& line : lines)
        line = metrics.elidedText(line, Qt::ElideRight, width);
    return lines;
}

QString attrValueText(const graph::AttrValue& value) {
    if (const auto* s = std::get_if<std::string>(&value)) return QString::fromStdString(*s);
    return QString::fromStdString(graph::format_value(value));
}

} // namespace

NodeItem::NodeItem(graph::NodeId id) : id_(id) {
    setFlags(ItemIsMovable | ItemIsSelectable | ItemSendsGeometryChanges);
    setAcceptHoverEvents(true);
    setZValue(1);
    width_ = geometry::kNodeWidth;
    height_ = geometry::kNodeHeight;
}

void NodeItem::setContent(NodeContent content) {
    content.node.x = content.node.y = 0;
    if (hasContent_ && content == content_) return;
    content_ = std::move(content);
    hasContent_ = true;
    const graph::Node& node = content_.node;
    const std::vector<graph::Problem>& problems = content_.problems;
    const graph::LayerKind* kind = graph::find_layer_kind(node.kind);
    const QString kindName = QString::fromStdString(node.kind);
    title_ = node.name.empty() ? kindName : QString::fromStdString(node.name);
    QStringList tags;
    tags << (node.name.empty() ? QStringLiteral("#%1").arg(node.id) : kindName);
    if (node.frozen) tags << QObject::tr("frozen");
    if (node.lr_multiplier != 1.0) tags << QStringLiteral("lr×%1").arg(node.lr_multiplier);
    tag_ = tags.join(QStringLiteral(" · "));
    color_ = kind != nullptr ? categoryColor(kind->category) : colors::kMutedText;
    outputNames_.clear();
    for (const std::string& name :
         kind != nullptr ? graph::output_port_names(node) : std::vector<std::string>{"output"})
        outputNames_ << QString::fromStdString(name);
    inputCount_ = graph::input_port_count(node);
    content_.inputConnected.resize(size_t(inputCount_), false);
    content_.outputConnected.resize(size_t(outputNames_.size()), false);

    const double textWidth = geometry::kNodeWidth - 2 * kPadding;
    QStringList attrs;
    if (kind != nullptr)
        for (const std::string& name : kind->summary_attrs)
            if (const graph::AttrValue* value = node.attrs.find(name))
                attrs << QStringLiteral("%1 %2").arg(QString::fromStdString(name),
                                                     attrValueText(*value));
    attrLines_ = attrs.isEmpty() ? QStringList()
                                 : wrapLines(attrs.join(QStringLiteral(" · ")),
                                             QFontMetricsF(bodyFont()), textWidth, kMaxAttrLines);

    shapeText_ = content_.output ? formatShape(*content_.output) : QStringLiteral("?");
    paramsText_ = content_.params > 0
                      ? QObject::tr("%1 params")
                            .arg(QString::fromStdString(graph::format_count(content_.params)))
                      : QString();

    // The card shows the first error (else the first warning); the tooltip lists them all.
    severity_ = Severity::None;
    problem_.clear();
    QStringList tooltip;
    if (kind != nullptr)
        tooltip << QStringLiteral("<b>%1</b> — %2")
                       .arg(kindName.toHtmlEscaped(),
                            QString::fromStdString(kind->doc).toHtmlEscaped());
    for (const graph::Problem& p : problems) {
        const bool error = p.severity == graph::Severity::Error;
        QString message = QString::fromStdString(p.message);
        if (p.port >= 0 && inputCount_ > 1)
            message = QObject::tr("input %1: %2").arg(p.port).arg(message);
        if (p.output_port >= 0)
            message = QObject::tr("output %1: %2")
                          .arg(outputNames_.value(p.output_port, QString::number(p.output_port)))
                          .arg(message);
        tooltip << QStringLiteral("<span style='color:%1'>%2</span>")
                       .arg((error ? colors::kError : colors::kWarning).name(),
                            message.toHtmlEscaped());
        if (error && severity_ != Severity::Error) {
            severity_ = Severity::Error;
            problem_ = message;
        } else if (!error && severity_ == Severity::None) {
            severity_ = Severity::Warning;
            problem_ = message;
        }
    }
    cardToolTip_ = tooltip.join(QStringLiteral("<br>"));
    setToolTip(cardToolTip_);
    portNames_.clear();
    for (int i = 0; i < inputCount_; ++i)
        portNames_ << (kind != nullptr && size_t(i) < kind->inputs.size()
                           ? QString::fromStdString(kind->inputs[size_t(i)])
                           : QObject::tr("input %1").arg(i));
    problemLines_ = problem_.isEmpty() ? QStringList()
                                       : wrapLines(problem_, QFontMetricsF(bodyFont()), textWidth,
                                                   kMaxProblemLines);

    // The problem takes the attributes' place, so a card with a problem hardly grows and does
    // not run into the card below (the attributes stay in the inspector).
    const QStringList& body = problemLines_.isEmpty() ? attrLines_ : problemLines_;
    double height = kHeaderHeight + kFooterHeight + 4;
    if (!body.isEmpty()) height += 4 + kLineHeight * double(body.size());
    if (outputNames_.size() > 1) height += kLineHeight; // the output ports' names
    if (height != height_) {
        prepareGeometryChange();
        height_ = height;
    }
    update();
}

QString NodeItem::outputShape(int port) const {
    if (port == 0) return shapeText_;
    return size_t(port) < content_.outputs.size() ? formatShape(content_.outputs[size_t(port)])
                                                  : QStringLiteral("?");
}

QPointF NodeItem::portPos(PortRef port) const {
    if (port.output) return {width_ * double(port.index + 1) / double(outputCount() + 1), height_};
    return {width_ * double(port.index + 1) / double(inputCount_ + 1), 0};
}

QPointF NodeItem::portScenePos(PortRef port) const {
    return mapToScene(portPos(port));
}

std::optional<PortRef> NodeItem::portAt(QPointF scenePos) const {
    const QPointF local = mapFromScene(scenePos);
    auto near = [&](PortRef port) {
        const QPointF d = portPos(port) - local;
        return d.x() * d.x() + d.y() * d.y() <= kPortReach * kPortReach;
    };
    for (int i = 0; i < outputCount(); ++i)
        if (near({true, i})) return PortRef{true, i};
    for (int i = 0; i < inputCount_; ++i)
        if (near({false, i})) return PortRef{false, i};
    return std::nullopt;
}

void NodeItem::setHighlightedPort(std::optional<PortRef> port, bool acceptable) {
    if (highlighted_ == port && highlightOk_ == acceptable) return;
    highlighted_ = port;
    highlightOk_ = acceptable;
    update();
}

QRectF NodeItem::titleRect() const {
    return QRectF(6, 2, width_ - 12, kHeaderHeight - 4);
}

QRectF NodeItem::boundingRect() const {
    const double m = kPortRadius + 4; // ports and the selection halo
    const QRectF around = cardRect().adjusted(-m, -m, m, m);
    return badge_ ? around.united(badgeRect().adjusted(-1, -1, 1, 1)) : around;
}

QRectF NodeItem::badgeRect() const {
    return QRectF(width_ + 8, 2, 148, 34);
}

void NodeItem::setBadge(std::optional<NodeBadge> badge) {
    if (badge == badge_) return;
    // Only a badge that comes or goes changes the bounding rect (and the scene's index); a new
    // value repaints the badge alone.
    if (badge.has_value() != badge_.has_value()) prepareGeometryChange();
    badge_ = std::move(badge);
    update(badgeRect().adjusted(-1, -1, 1, 1));
}

void NodeItem::paintBadge(QPainter* painter) const {
    const QRectF box = badgeRect();
    painter->setPen(QPen(badge_->color, 1.2));
    QColor fill = badge_->color;
    fill.setAlpha(28);
    painter->setBrush(fill);
    painter->drawRoundedRect(box, 5, 5);
    // Sparkline on a log scale: gradient norms span decades.
    const QRectF spark = QRectF(box.left() + 6, box.top() + 4, box.width() - 12, 13);
    std::vector<double> logs;
    for (double v : badge_->spark)
        if (std::isfinite(v) && v > 0) logs.push_back(std::log10(v));
    if (logs.size() >= 2) {
        const auto [lo, hi] = std::minmax_element(logs.begin(), logs.end());
        const double span = *hi - *lo;
        QPolygonF line;
        for (size_t i = 0; i < logs.size(); ++i)
            line << QPointF(spark.left() + spark.width() * double(i) / double(logs.size() - 1),
                            span > 1e-9 ? spark.bottom() - spark.height() * (logs[i] - *lo) / span
                                        : spark.center().y()); // flat: across the middle
        painter->setPen(QPen(badge_->color.darker(115), 1.2));
        painter->setBrush(Qt::NoBrush);
        painter->drawPolyline(line);
    }
    painter->setFont(bodyFont());
    painter->setPen(badge_->color.darker(140));
    painter->drawText(
        QRectF(box.left() + 6, box.top() + 18, box.width() - 12, 14),
        Qt::AlignVCenter | Qt::AlignLeft,
        QFontMetricsF(bodyFont()).elidedText(badge_->text, Qt::ElideRight, box.width() - 12));
}

NodeBadge nodeBadge(const train::LayerBadge& b) {
    NodeBadge badge;
    badge.health = b.health;
    switch (b.health) {
    case train::LayerHealth::NonFinite:
    case train::LayerHealth::Exploding:
        badge.color = colors::kError;
        break;
    case train::LayerHealth::Dead:
    case train::LayerHealth::Vanishing:
        badge.color = colors::kWarning;
        break;
    case train::LayerHealth::Healthy:
        badge.color = colors::kOk;
        break;
    case train::LayerHealth::Unknown:
    case train::LayerHealth::Frozen:
        badge.color = colors::kMutedText;
        break;
    }
    QStringList parts;
    if (b.grad_norm) parts << QStringLiteral("‖g‖ %1").arg(*b.grad_norm, 0, 'g', 2);
    if (b.zero_fraction && *b.zero_fraction > 0)
        parts << QObject::tr("%1% zeros").arg(*b.zero_fraction * 100, 0, 'f', 0);
    if (b.health != train::LayerHealth::Healthy && b.health != train::LayerHealth::Unknown)
        parts.prepend(QString::fromLatin1(train::health_name(b.health)));
    badge.text = parts.join(QStringLiteral(" · "));
    if (b.activation_mean && b.activation_std) {
        badge.edgeText = QStringLiteral("μ %1 σ %2")
                             .arg(*b.activation_mean, 0, 'g', 2)
                             .arg(*b.activation_std, 0, 'g', 2);
        if (b.zero_fraction && *b.zero_fraction > 0)
            badge.edgeText += QObject::tr(" · %1% zeros").arg(*b.zero_fraction * 100, 0, 'f', 0);
        badge.edgeToolTip =
            QObject::tr("%1's output at the inspected step: mean %2, standard deviation %3%4")
                .arg(QString::fromStdString(b.layer.name))
                .arg(*b.activation_mean, 0, 'g', 4)
                .arg(*b.activation_std, 0, 'g', 4)
                .arg(b.zero_fraction
                         ? QObject::tr(", %1% exact zeros").arg(*b.zero_fraction * 100, 0, 'f', 1)
                         : QString());
    }
    badge.toolTip = QObject::tr("%1: %2").arg(QString::fromLatin1(train::health_name(b.health)),
                                              QString::fromStdString(b.reason));
    badge.spark = b.recent_grad_norms;
    return badge;
}

QPainterPath NodeItem::shape() const {
    QPainterPath path;
    path.addRoundedRect(cardRect(), 6, 6);
    // Ports stick out of the card; they must be hit too.
    for (int i = 0; i < inputCount_; ++i)
        path.addEllipse(portPos({false, i}), kPortReach, kPortReach);
    for (int i = 0; i < outputCount(); ++i)
        path.addEllipse(portPos({true, i}), kPortReach, kPortReach);
    return path;
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
    painter->setRenderHint(QPainter::Antialiasing);
    const bool selected = option->state.testFlag(QStyle::State_Selected);
    const QRectF card = cardRect();
    const bool error = severity_ == Severity::Error;
    const bool warning = severity_ == Severity::Warning;

    // Shadow, card, header band tinted with the category colour.
    painter->setPen(Qt::NoPen);
    painter->setBrush(colors::kNodeShadow);
    painter->drawRoundedRect(card.translated(0, 2), 6, 6);
    painter->setBrush(error ? colors::kErrorSoft : colors::kSurface);
    painter->drawRoundedRect(card, 6, 6);

    QPainterPath header;
    header.addRoundedRect(QRectF(0, 0, width_, kHeaderHeight + 6), 6, 6);
    QPainterPath headerClip;
    headerClip.addRect(QRectF(0, 0, width_, kHeaderHeight));
    QColor tint = color_;
    tint.setAlpha(error ? 30 : 34);
    painter->setBrush(tint);
    painter->drawPath(header.intersected(headerClip));
    painter->setBrush(color_);
    painter->drawRoundedRect(QRectF(0, 0, 4, kHeaderHeight), 2, 2);

    if (badge_) paintBadge(painter);

    // Zoomed far out the text would be a few pixels high: draw the card and its outline only
    // (this keeps a fitted 500-node graph within a frame).
    if (QStyleOptionGraphicsItem::levelOfDetailFromTransform(painter->worldTransform()) <
        kTextLevelOfDetail) {
        painter->setBrush(Qt::NoBrush);
        painter->setPen(error      ? QPen(colors::kError, 1.6)
                        : warning  ? QPen(colors::kWarning, 1.3)
                        : selected ? QPen(colors::kAccent, 2.4)
                                   : QPen(colors::kBorder.darker(112), 1));
        painter->drawRoundedRect(card, 6, 6);
        return;
    }

    // Title and tag.
    const QFont title = titleFont();
    const QFont body = bodyFont();
    const QFontMetricsF titleMetrics(title), bodyMetrics(body);
    const double textWidth = width_ - 2 * kPadding;
    const double tagWidth = std::min(bodyMetrics.horizontalAdvance(tag_), textWidth * 0.55);
    painter->setPen(colors::kText);
    painter->setFont(title);
    painter->drawText(QRectF(kPadding, 0, textWidth - tagWidth - 6, kHeaderHeight),
                      Qt::AlignVCenter | Qt::AlignLeft,
                      titleMetrics.elidedText(title_, Qt::ElideRight, textWidth - tagWidth - 6));
    painter->setFont(body);
    painter->setPen(colors::kMutedText);
    painter->drawText(QRectF(kPadding, 0, textWidth, kHeaderHeight),
                      Qt::AlignVCenter | Qt::AlignRight,
                      bodyMetrics.elidedText(tag_, Qt::ElideRight, tagWidth));

    // Key attributes, or the problem in their place.
    const QStringList& bodyLines = problemLines_.isEmpty() ? attrLines_ : problemLines_;
    double y = kHeaderHeight + (bodyLines.isEmpty() ? 2 : 4);
    if (!problemLines_.isEmpty()) painter->setPen(error ? colors::kError : colors::kWarning);
    for (const QString& line : bodyLines) {
        painter->drawText(QRectF(kPadding, y, textWidth, kLineHeight),
                          Qt::AlignVCenter | Qt::AlignLeft, line);
        y += kLineHeight;
    }

    // Output shape and parameter count.
    const QFont mono = monoFont();
    painter->setFont(mono);
    painter->setPen(shapeText_ == QLatin1String("?") ? colors::kMutedText : colors::kText);
    const double paramsWidth = bodyMetrics.horizontalAdvance(paramsText_);
    painter->drawText(
        QRectF(kPadding, y, textWidth - paramsWidth - 6, kFooterHeight),
        Qt::AlignVCenter | Qt::AlignLeft,
        QFontMetricsF(mono).elidedText(shapeText_, Qt::ElideRight, textWidth - paramsWidth - 6));
    painter->setFont(body);
    painter->setPen(colors::kMutedText);
    painter->drawText(QRectF(kPadding, y, textWidth, kFooterHeight),
                      Qt::AlignVCenter | Qt::AlignRight, paramsText_);
    // Several outputs: each port's name just above it.
    if (outputCount() > 1) {
        const double slot = width_ / double(outputCount() + 1);
        for (int i = 0; i < outputCount(); ++i) {
            const QRectF cell(portPos({true, i}).x() - slot / 2, height_ - kLineHeight - 4, slot,
                              kLineHeight);
            painter->drawText(cell, Qt::AlignCenter,
                              bodyMetrics.elidedText(outputNames_[i], Qt::ElideRight, slot - 4));
        }
    }

    // Outline by severity; the selection is a halo around it, so a selected card with an error
    // still shows red.
    QPen outline(colors::kBorder.darker(112), 1);
    if (error) outline = QPen(colors::kError, 1.6);
    if (warning) outline = QPen(colors::kWarning, 1.3);
    if (selected && !error && !warning) outline = QPen(colors::kAccent, 1.6);
    painter->setBrush(Qt::NoBrush);
    if (selected) {
        QColor halo = colors::kAccent;
        halo.setAlpha(110);
        painter->setPen(QPen(halo, 3));
        painter->drawRoundedRect(card.adjusted(-3, -3, 3, 3), 8, 8);
    }
    painter->setPen(outline);
    painter->drawRoundedRect(card, 6, 6);

    // Ports.
    auto drawPort = [&](PortRef port, bool connected) {
        const bool hovered = hovered_ == port;
        const bool highlighted = highlighted_ == port;
        double radius = kPortRadius + (hovered || highlighted ? 1.5 : 0);
        QColor fill = connected ? color_ : colors::kSurface;
        QColor ring = connected ? color_.darker(115) : colors::kEdge;
        if (highlighted) {
            fill = highlightOk_ ? colors::kOk : colors::kError;
            ring = fill.darker(120);
        } else if (hovered) {
            ring = colors::kAccent;
        }
        painter->setPen(QPen(ring, 1.4));
        painter->setBrush(fill);
        painter->drawEllipse(portPos(port), radius, radius);
    };
    for (int i = 0; i < inputCount_; ++i)
        drawPort({false, i}, content_.inputConnected[size_t(i)]);
    for (int i = 0; i < outputCount(); ++i)
        drawPort({true, i}, content_.outputConnected[size_t(i)]);
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
    auto* graph = qobject_cast<GraphScene*>(scene());
    if (graph != nullptr) {
        if (change == ItemPositionChange) return graph->snappedNodePosition(value.toPointF());
        if (change == ItemPositionHasChanged) graph->nodeItemMoved(this);
    }
    return QGraphicsItem::itemChange(change, value);
}

void NodeItem::hoverMoveEvent(QGraphicsSceneHoverEvent* event) {
    const std::optional<PortRef> port = portAt(event->scenePos());
    if (port != hovered_) {
        hovered_ = port;
        setCursor(port && port->output ? Qt::CrossCursor : Qt::ArrowCursor);
        // Over a port, the tooltip names it (which input of an Add or a Bilinear is which).
        if (!port)
            setToolTip(cardToolTip_);
        else if (port->output && outputCount() > 1)
            setToolTip(QObject::tr("Output %1 %2 — drag to an input to connect")
                           .arg(outputName(port->index), outputShape(port->index)));
        else if (port->output)
            setToolTip(QObject::tr("Output %1 — drag to an input to connect").arg(shapeText_));
        else
            setToolTip(
                QObject::tr("Input %1: %2").arg(port->index).arg(portNames_.value(port->index)));
        update();
    }
    if (!port && badge_)
        setToolTip(badgeRect().contains(event->pos()) ? badge_->toolTip : cardToolTip_);
    QGraphicsItem::hoverMoveEvent(event);
}

void NodeItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* event) {
    if (hovered_) {
        hovered_.reset();
        unsetCursor();
        setToolTip(cardToolTip_);
        update();
    }
    QGraphicsItem::hoverLeaveEvent(event);
}

} // namespace myelin::ui

#!/usr/bin/python3
"""The TensorFlow guide "tf.data: Build TensorFlow input pipelines", CSV-free parts, on
sluice with only the import changed: ``import tensorflow as tf`` became
``import sluice as tf``, so every ``tf.data.*`` call below is the guide's own.

What is not tf.data in the guide changes, because sluice has no TensorFlow ops: tensor
math inside the functions given to map/filter is numpy (``np.full`` for ``tf.fill``,
``x % 2`` for ``tf.math.mod``...), elements print as numpy values (no ``.numpy()``),
the guide's downloads (Fashion-MNIST via Keras, the French-English TFRecord, the
credit-card CSV) are replaced by small arrays and files written here, and
``tf.train.Example`` is ``sluice.io.serialize_example``. Sections: basic mechanics,
dataset structure, numpy arrays, Python generators (from_generator), TFRecord and text
files (interleave), batching and padded_batch, repeat and shuffle, map with tuples,
time-series windowing, resampling (sample_from_datasets, rejection_resample), iterator
checkpointing.

    PYTHONPATH=build/python /usr/bin/python3 examples/tf_guide_pipeline.py

tests/python/test_tfdata_guide.py runs it and checks what it prints.
"""
import os
import tempfile

import numpy as np

import sluice as tf  # was: import tensorflow as tf


def section(title):
    print("== " + title)


def main():
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="sluice_guide_")

    section("basic mechanics")
    dataset = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1])
    print([int(e) for e in dataset])
    it = iter(dataset)
    print(int(next(it)))
    print(int(dataset.reduce(0, lambda state, value: state + value)))

    section("dataset structure")
    dataset1 = tf.data.Dataset.from_tensor_slices(rng.uniform(size=[4, 10]).astype(np.float32))
    print(dataset1.element_spec)
    dataset2 = tf.data.Dataset.from_tensor_slices(
        (rng.uniform(size=[4]).astype(np.float32),
         rng.integers(0, 100, size=[4, 100]).astype(np.int32)))
    print(dataset2.element_spec)
    dataset3 = tf.data.Dataset.zip((dataset1, dataset2))
    print(dataset3.element_spec)
    for a, (b, c) in dataset3:
        print("shapes: {a.shape}, {b.shape}, {c.shape}".format(a=a, b=b, c=c))

    section("numpy arrays")
    images = rng.integers(0, 255, size=[60, 28, 28]).astype(np.uint8)
    labels = rng.integers(0, 10, size=[60]).astype(np.int64)
    images = images / 255
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    print(dataset.element_spec)

    section("python generators")
    def count(stop):
        i = 0
        while i < stop:
            yield i
            i += 1
    ds_counter = tf.data.Dataset.from_generator(count, args=[25], output_types=tf.int32,
                                                output_shapes=(),)
    for count_batch in ds_counter.repeat().batch(10).take(10):
        print(count_batch)

    def gen_series():
        i = 0
        while True:
            size = np.random.randint(0, 10)
            yield i, np.random.normal(size=(size,))
            i += 1
    ds_series = tf.data.Dataset.from_generator(
        gen_series,
        output_types=(tf.int32, tf.float32),
        output_shapes=((), (None,)))
    print(ds_series.element_spec)
    ds_series_batch = ds_series.shuffle(20).padded_batch(10)
    ids, sequence_batch = next(iter(ds_series_batch))
    print(ids)
    print()
    print(sequence_batch.shape[0], sequence_batch.dtype)

    section("from_tensor_slices of dicts")
    features = {"age": np.array([22.0, 38.0, 26.0, 35.0]),
                "fare": np.array([7.25, 71.28, 7.92, 53.1]),
                "survived": np.array([0, 1, 1, 1])}
    feature_ds = tf.data.Dataset.from_tensor_slices(features)
    for feature_batch in feature_ds.take(1):
        for key, value in feature_batch.items():
            print("  {!r:20s}: {}".format(key, value))
    # A dict of features and a label: (features, label) pairs, as the guide's CSV part makes.
    pairs = tf.data.Dataset.from_tensor_slices(
        ({"age": features["age"], "fare": features["fare"]}, features["survived"]))
    print(pairs.batch(2).element_spec)

    section("TFRecord files, interleaved")
    filenames = []
    for shard in range(3):
        path = os.path.join(tmp, "fsns-%02d.tfrec" % shard)
        with tf.io.TFRecordWriter(path) as w:
            for i in range(4):
                w.write(tf.io.serialize_example(
                    {"image/text": b"shard %d line %d" % (shard, i), "image/class": i}))
        filenames.append(path)
    dataset = tf.data.TFRecordDataset(filenames=[filenames[0]])
    print(dataset.element_spec)
    raw_example = next(iter(dataset))
    print(len(raw_example), "bytes")
    files_ds = tf.data.Dataset.from_tensor_slices(filenames)
    records = files_ds.interleave(tf.data.TFRecordDataset, cycle_length=3)
    parse = tf.io.parse_example({"image/text": tf.io.FixedLenFeature([], "string"),
                                 "image/class": tf.io.FixedLenFeature([], "int64")})
    for ex in records.map(parse).take(4):
        print(ex["image/text"], ex["image/class"])

    section("text files, interleaved")
    file_paths = []
    for name, lines in [("cowper", ["# header", "Achilles sing", "O Goddess"]),
                        ("derby", ["Of Peleus' son", "# note", "Achilles, sing"]),
                        ("butler", ["Sing, O goddess", "the anger of Achilles"])]:
        path = os.path.join(tmp, name + ".txt")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        file_paths.append(path)
    files_ds = tf.data.Dataset.from_tensor_slices(file_paths)
    lines_ds = files_ds.interleave(tf.data.TextLineDataset, cycle_length=3)
    for i, line in enumerate(lines_ds.take(6)):
        if i % 3 == 0:
            print()
        print(line)
    print()
    no_comments = lines_ds.filter(lambda line: not line.startswith(b"#"))
    print([l for l in no_comments])

    section("batching")
    inc_dataset = tf.data.Dataset.range(100)
    dec_dataset = tf.data.Dataset.range(0, -100, -1)
    dataset = tf.data.Dataset.zip((inc_dataset, dec_dataset))
    batched_dataset = dataset.batch(4)
    for batch in batched_dataset.take(4):
        print([arr.tolist() for arr in batch])
    batched_dataset = dataset.batch(7, drop_remainder=True)
    print(batched_dataset.element_spec)

    section("padded_batch")
    dataset = tf.data.Dataset.range(100)
    dataset = dataset.map(lambda x: np.full([int(x)], x))  # tf.fill([tf.cast(x, tf.int32)], x)
    dataset = dataset.padded_batch(4, padded_shapes=(None,))
    for batch in dataset.take(2):
        print(batch)
        print()

    section("repeat and shuffle")
    lines = tf.data.TextLineDataset(file_paths[0])
    counter = tf.data.experimental.Counter()
    dataset = tf.data.Dataset.zip((counter, lines))
    dataset = dataset.shuffle(buffer_size=100, seed=1)
    dataset = dataset.batch(20)
    n, line_batch = next(iter(dataset))
    print(sorted(n.tolist()))
    dataset = tf.data.Dataset.zip((counter, lines)).repeat(2).shuffle(100, seed=1).batch(4)
    print([len(b[0]) for b in dataset])

    section("map with tuples")
    def scale(image, label):  # the guide's parse_image: (image, label) in, (image, label) out
        return (image * 2).astype(np.float32), label
    image_ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(scale)
    for image, label in image_ds.take(1):
        print(image.shape, image.dtype, label)

    section("time series windowing")
    range_ds = tf.data.Dataset.range(100000)
    batches = range_ds.batch(10, drop_remainder=True)
    for batch in batches.take(5):
        print(batch)

    def dense_1_step(batch):
        # Shift features and labels one step relative to each other.
        return batch[:-1], batch[1:]
    predict_dense_1_step = batches.map(dense_1_step)
    for features, label in predict_dense_1_step.take(3):
        print(features, " => ", label)

    batches = range_ds.batch(15, drop_remainder=True)

    def label_next_5_steps(batch):
        return (batch[:-5],   # Inputs: All except the last 5 steps
                batch[-5:])   # Labels: The last 5 steps
    predict_5_steps = batches.map(label_next_5_steps)
    for features, label in predict_5_steps.take(3):
        print(features, " => ", label)

    feature_length = 10
    label_length = 3
    features = range_ds.batch(feature_length, drop_remainder=True)
    labels = range_ds.batch(feature_length).skip(1).map(lambda labels: labels[:label_length])
    predicted_steps = tf.data.Dataset.zip((features, labels))
    for features, label in predicted_steps.take(5):
        print(features, " => ", label)

    window_size = 5
    windows = range_ds.window(window_size, shift=1)
    for sub_ds in windows.take(5):
        print(sub_ds)
    for x in windows.flat_map(lambda x: x).take(30):
        print(x, end=" ")
    print()

    def sub_to_batch(sub):
        return sub.batch(window_size, drop_remainder=True)
    for example in windows.flat_map(sub_to_batch).take(5):
        print(example)

    def make_window_dataset(ds, window_size=5, shift=1, stride=1):
        windows = ds.window(window_size, shift=shift, stride=stride)

        def sub_to_batch(sub):
            return sub.batch(window_size, drop_remainder=True)
        windows = windows.flat_map(sub_to_batch)
        return windows
    ds = make_window_dataset(range_ds, window_size=10, shift=5, stride=3)
    for example in ds.take(10):
        print(example)
    dense_labels_ds = ds.map(dense_1_step)
    for inputs, labels in dense_labels_ds.take(3):
        print(inputs, "=>")
        print(labels)

    section("resampling")
    # The credit-card data: 3% positives (the guide reads a CSV; here, arrays).
    n = 2000
    label = (rng.uniform(size=n) < 0.03).astype(np.int64)
    feats = rng.normal(size=[n, 4]).astype(np.float32)
    # make_csv_dataset's default num_epochs=None repeats the file forever: so does this.
    creditcard_ds = tf.data.Dataset.from_tensor_slices((feats, label)).batch(1024).repeat()

    def count(counts, batch):
        features, labels = batch
        class_1 = labels == 1
        class_1 = class_1.astype(np.int32)
        class_0 = labels == 0
        class_0 = class_0.astype(np.int32)
        counts["class_0"] += class_0.sum()
        counts["class_1"] += class_1.sum()
        return counts
    counts = creditcard_ds.take(10).reduce(
        initial_state={"class_0": np.int32(0), "class_1": np.int32(0)}, reduce_func=count)
    counts = np.array([counts["class_0"], counts["class_1"]]).astype(np.float32)
    fractions = counts / counts.sum()
    print(fractions)

    negative_ds = (creditcard_ds.unbatch()
                   .filter(lambda features, label: label == 0)
                   .repeat())
    positive_ds = (creditcard_ds.unbatch()
                   .filter(lambda features, label: label == 1)
                   .repeat())
    for features, label in positive_ds.batch(10).take(1):
        print(label)
    balanced_ds = tf.data.Dataset.sample_from_datasets(
        [negative_ds, positive_ds], [0.5, 0.5], seed=1).batch(10)
    sampled = [labels.mean() for features, labels in balanced_ds.take(200)]
    print("sample_from_datasets: mean label %.2f" % np.mean(sampled))

    def class_func(features, label):
        return label
    resample_ds = (creditcard_ds.unbatch()
                   .rejection_resample(class_func, target_dist=[0.5, 0.5],
                                       initial_dist=fractions, seed=1)
                   .batch(10))
    balanced_ds = resample_ds.map(lambda extra_label, features_and_label: features_and_label)
    resampled = [labels for features, labels in balanced_ds.repeat().take(100)]
    print("rejection_resample: mean label %.2f" % np.mean(np.concatenate(resampled)))

    section("iterator checkpointing")
    range_ds = tf.data.Dataset.range(20)
    iterator = iter(range_ds)
    print([int(next(iterator)) for _ in range(5)])
    save_path = iterator.save()  # the guide: tf.train.Checkpoint(iterator=iterator).save()
    print([int(next(iterator)) for _ in range(5)])
    iterator = iter(range_ds)
    iterator.restore(save_path)
    print([int(next(iterator)) for _ in range(5)])


if __name__ == "__main__":
    main()
